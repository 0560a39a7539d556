// Stage 1 for function destinations: aws and azure Upstreams (their host, functions and credentials) and the routes'
// destinationSpec.aws / destinationSpec.azure (which function, how it is invoked).
import { isIP } from 'node:net';
import { load } from 'js-yaml';
import type { Upstream } from '../../../api/resources.js';
import type { Destination, Route } from '../../../api/routes.js';
import type { Attempt, BindSink, Problem, ResolveContext, ResourceIndex, RouteSite } from '../../feature.js';
import type { AwsCredentialsIR, AwsLambdaIR, AzureFunctionIR, RouteIR, UpstreamIR } from '../../ir.js';
import { nsName } from '../../names.js';
import { secretValue } from '../../secrets.js';
import { ROLE_ARN_NOT_SUPPORTED } from './schema.js';

type AwsSpec = NonNullable<Upstream['spec']['aws']>;
type AzureSpec = NonNullable<Upstream['spec']['azure']>;
type AwsDestinationSpec = NonNullable<NonNullable<Destination['destinationSpec']>['aws']>;
type LambdaUpstreamIR = NonNullable<UpstreamIR['awsLambda']>;
type Flags = NonNullable<LambdaUpstreamIR['overrides']>;

/** The keys `glooctl create secret aws` writes (Gloo's AwsSecretConverter). */
const AWS_KEYS = { accessKey: 'aws_access_key_id', secretKey: 'aws_secret_access_key', sessionToken: 'aws_session_token' };
const FUNCTION_ARN = /^arn:(aws[a-z-]*):lambda:([a-z0-9-]+):(\d{12}):function:([A-Za-z0-9_-]+)(:[A-Za-z0-9$_-]+)?$/;
const MASTER_KEY = '_master';

/** The Upstream fields of aws and azure Upstreams: the cluster to the service, and what routes need to call it. */
export function resolveFunctionUpstream(upstream: Upstream, index: ResourceIndex): Attempt<Partial<UpstreamIR>> {
  const { aws, azure } = upstream.spec;
  if (aws) return resolveAws(upstream, aws, index);
  if (azure) return resolveAzure(upstream, azure, index);
  return { problems: [] };
}

/** One HTTPS host as the cluster's only endpoint (the Upstream's own sslConfig, when it has one, is kept). */
function httpsEndpoint(upstream: Upstream, host: string, port: number): Partial<UpstreamIR> {
  const ip = isIP(host) !== 0;
  const out: Partial<UpstreamIR> = { discovery: ip ? 'EDS' : 'STRICT_DNS', endpoints: [{ address: host, port }] };
  if (!upstream.spec.sslConfig) out.tls = { verifySubjectAltName: [], alpnProtocols: [], ...(ip ? {} : { sni: host }) };
  return out;
}

function partition(region: string): string {
  return region.startsWith('cn-') ? 'aws-cn' : region.startsWith('us-gov-') ? 'aws-us-gov' : 'aws';
}

function resolveAws(upstream: Upstream, spec: AwsSpec, index: ResourceIndex): Attempt<Partial<UpstreamIR>> {
  const problems: Problem[] = [];
  const warnings: Problem[] = [];
  const ns = upstream.metadata.namespace;
  // the China regions' endpoints are under amazonaws.com.cn
  const domain = spec.region.startsWith('cn-') ? 'amazonaws.com.cn' : 'amazonaws.com';
  const [endpointHost, endpointPort] = spec.endpoint ? splitHostPort(spec.endpoint) : [`lambda.${spec.region}.${domain}`, 443];
  if (spec.roleArn) problems.push({ code: 'NotSupported', message: `aws.roleArn: ${ROLE_ARN_NOT_SUPPORTED}` });

  let credentials: AwsCredentialsIR | undefined;
  if (spec.secretRef) {
    const secretNs = spec.secretRef.namespace ?? ns;
    const name = `${secretNs}.${spec.secretRef.name}`;
    const secret = index.secrets.get(nsName(secretNs, spec.secretRef.name));
    if (!secret) {
      problems.push({ code: 'SecretNotFound', message: `aws.secretRef: Secret ${name} not found` });
    } else {
      // Gloo's solo-kit layout: one `aws` key holding {accessKey, secretKey, sessionToken}
      const legacy = secretValue(secret, 'aws');
      const doc = legacy === undefined ? {} : yamlObject(legacy);
      const field = (key: string, legacyKey: string): string | undefined => {
        const v = secretValue(secret, key) ?? doc[legacyKey];
        return typeof v === 'string' && v !== '' ? v : undefined;
      };
      const accessKeyId = field(AWS_KEYS.accessKey, 'accessKey');
      const secretAccessKey = field(AWS_KEYS.secretKey, 'secretKey');
      const sessionToken = field(AWS_KEYS.sessionToken, 'sessionToken');
      if (!accessKeyId || !secretAccessKey) {
        problems.push({
          code: 'InvalidSpec',
          message:
            `aws.secretRef: Secret ${name} needs ${AWS_KEYS.accessKey} and ${AWS_KEYS.secretKey} ` +
            `(the keys glooctl create secret aws writes; ${AWS_KEYS.sessionToken} is optional)`,
        });
      } else credentials = { accessKeyId, secretAccessKey, ...(sessionToken ? { sessionToken } : {}) };
    }
  } else {
    warnings.push({
      code: 'InvalidSpec',
      message:
        "aws.secretRef: none, so Envoy signs with its own default AWS credentials chain (the Envoy process's environment, " +
        'credentials file, web identity token, ECS or EC2 instance metadata)',
    });
  }

  const functions: LambdaUpstreamIR['functions'] = [];
  const seen = new Set<string>();
  (spec.lambdaFunctions ?? []).forEach((f, i) => {
    const where = `aws.lambdaFunctions[${i}]`;
    const logicalName = f.logicalName || `${f.lambdaFunctionName}${f.qualifier ?? ''}`;
    if (seen.has(logicalName)) problems.push({ code: 'InvalidSpec', message: `${where}.logicalName: ${logicalName} is listed twice` });
    seen.add(logicalName);
    const arn = FUNCTION_ARN.exec(f.lambdaFunctionName);
    if (arn) {
      if (arn[2] !== spec.region)
        problems.push({
          code: 'InvalidSpec',
          message: `${where}.lambdaFunctionName: the function is in ${arn[2]}, the upstream's region is ${spec.region}`,
        });
      if (arn[5] && f.qualifier)
        problems.push({ code: 'InvalidSpec', message: `${where}: the ARN has a qualifier already; set qualifier or put it in the ARN` });
    } else if (!spec.awsAccountId) {
      problems.push({
        code: 'InvalidSpec',
        message:
          `${where}.lambdaFunctionName: Envoy's aws_lambda filter invokes a function by its ARN ` +
          `(arn:${partition(spec.region)}:lambda:${spec.region}:<account>:function:${f.lambdaFunctionName}), ` +
          'so it needs the account: set aws.awsAccountId, or give the function as its ARN',
      });
    } else if (!/^[A-Za-z0-9_-]+$/.test(f.lambdaFunctionName)) {
      problems.push({
        code: 'InvalidSpec',
        message: `${where}.lambdaFunctionName: expected a function name (letters, digits, _, -) or ARN`,
      });
    }
    functions.push({ logicalName, name: f.lambdaFunctionName, ...(f.qualifier ? { qualifier: f.qualifier } : {}) });
  });

  const over = spec.destinationOverrides;
  const overrides: Flags | undefined = over && { ...(over.logicalName ? { logicalName: over.logicalName } : {}), ...flagsOf(over) };
  if (problems.length) return { problems, warnings };
  const lambda: LambdaUpstreamIR = { region: spec.region, host: endpointHost, functions };
  if (spec.awsAccountId) lambda.accountId = spec.awsAccountId;
  if (credentials) lambda.credentials = credentials;
  if (overrides && Object.keys(overrides).length) lambda.overrides = overrides;
  return { ir: { ...httpsEndpoint(upstream, endpointHost, endpointPort), awsLambda: lambda }, problems, warnings };
}

function splitHostPort(endpoint: string): [string, number] {
  const at = endpoint.lastIndexOf(':');
  return [endpoint.slice(0, at), Number(endpoint.slice(at + 1))];
}

/** The flags of an aws DestinationSpec that are set (Gloo's overrides take only what is not falsy). */
function flagsOf(d: AwsDestinationSpec): Flags {
  const flags: Flags = {};
  if (d.invocationStyle === 'ASYNC' || d.invocationStyle === 1) flags.async = true;
  if (d.requestTransformation) flags.requestTransformation = true;
  const unwrap = [d.responseTransformation, d.unwrapAsApiGateway, d.unwrapAsAlb];
  if (unwrap.some(Boolean)) flags.unwrap = true;
  if (d.wrapAsApiGateway) flags.wrapAsApiGateway = true;
  return flags;
}

function resolveAzure(upstream: Upstream, spec: AzureSpec, index: ResourceIndex): Attempt<Partial<UpstreamIR>> {
  const problems: Problem[] = [];
  const host = `${spec.functionAppName}.azurewebsites.net`;
  const keys: Record<string, string> = {};
  if (spec.secretRef) {
    const secretNs = spec.secretRef.namespace ?? upstream.metadata.namespace;
    const name = `${secretNs}.${spec.secretRef.name}`;
    const secret = index.secrets.get(nsName(secretNs, spec.secretRef.name));
    if (!secret) problems.push({ code: 'SecretNotFound', message: `azure.secretRef: Secret ${name} not found` });
    else {
      const names = new Set([...Object.keys(secret.spec.data ?? {}), ...Object.keys(secret.spec.stringData ?? {})]);
      for (const key of names) {
        const value = secretValue(secret, key);
        if (value === undefined) continue;
        // Gloo's own layout: one `azure` key holding {apiKeys: {name: key}}
        if (key === 'azure') Object.assign(keys, glooApiKeys(value, `azure.secretRef: Secret ${name}`, problems));
        else keys[key] = value;
      }
    }
  }
  const functions = (spec.functions ?? []).map((f) => {
    const level = typeof f.authLevel === 'number' ? (['Anonymous', 'Function', 'Admin'] as const)[f.authLevel] : f.authLevel;
    return { name: f.functionName, authLevel: level ?? 'Anonymous' };
  });
  if (problems.length) return { problems };
  return { ir: { ...httpsEndpoint(upstream, host, 443), azure: { host, functions, keys } }, problems };
}

/** A Secret value holding a YAML (or JSON) mapping, as Gloo's solo-kit writes typed secrets; {} when it is not one. */
function yamlObject(text: string): Record<string, unknown> {
  try {
    const doc = load(text);
    return typeof doc === 'object' && doc !== null && !Array.isArray(doc) ? (doc as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

function glooApiKeys(text: string, where: string, problems: Problem[]): Record<string, string> {
  const apiKeys = yamlObject(text)['apiKeys'];
  if (typeof apiKeys !== 'object' || apiKeys === null) {
    problems.push({ code: 'InvalidSpec', message: `${where}: its azure key is not Gloo's {apiKeys: {<name>: <key>}}` });
    return {};
  }
  return Object.fromEntries(Object.entries(apiKeys).filter((e): e is [string, string] => typeof e[1] === 'string'));
}

// ---------------------------------------------------------------------------------------------------
// Routes

/** The destinations of a route that name a function (or go to a function Upstream without naming one). */
export function bindFunctionRoute(route: Route, ir: RouteIR, site: RouteSite, sink: BindSink, ctx: ResolveContext): void {
  const action = route.routeAction;
  if (!action) return;
  if (action.single) {
    const found = bindDestination(action.single, `${site.where}.routeAction.single`, site, sink, ctx);
    if (found?.aws) ir.awsLambda = found.aws;
    if (found?.azure) ir.azureFunction = found.azure;
    const o = route.options;
    const rewrite = ['hostRewrite', 'autoHostRewrite', 'hostRewriteHeader', 'hostRewritePathRegex'].find(
      (k) => o?.[k as keyof typeof o] !== undefined,
    );
    if (rewrite && (found?.aws || found?.azure)) {
      const why = found.aws
        ? `Envoy's aws_lambda filter signs the request for ${found.aws.host} and a Host rewrite would change it afterwards, ` +
          'so the Lambda API would refuse the signature'
        : `the Azure function is called with its Function App's Host (${found.azure?.host ?? ''}), which replaces it`;
      sink.warnings.push({ code: 'InvalidSpec', message: `${site.where}.options.${rewrite}: ignored: ${why}` });
    }
  }
  action.multi?.destinations.forEach((d, j) => {
    const where = `${site.where}.routeAction.multi.destinations[${j}].destination`;
    const found = bindDestination(d.destination, where, site, sink, ctx);
    if (found?.azure) {
      sink.problems.push({
        code: 'NotSupported',
        message:
          `${where}.destinationSpec.azure: an Azure function is called on its own path (/api/<function>), and Envoy rewrites ` +
          'the path per route, not per weighted destination; route to it with routeAction.single',
      });
    }
    const cluster = ir.action.type === 'route' ? ir.action.clusters.find((c) => c.destination === j) : undefined;
    if (found?.aws && cluster) cluster.awsLambda = found.aws;
  });
}

function bindDestination(
  d: Destination,
  where: string,
  site: RouteSite,
  sink: BindSink,
  ctx: ResolveContext,
): { aws?: AwsLambdaIR; azure?: AzureFunctionIR } | undefined {
  const spec = d.destinationSpec;
  // read before the upstream is looked up: what the route asks for is the same whichever upstream it names
  const lambda = spec?.aws && { logicalName: spec.aws.logicalName ?? '', flags: flagsOf(spec.aws) };
  const azureName = spec?.azure?.functionName;
  const ref = d.upstream;
  // a missing or rejected upstream is the routing feature's warning; rest and grpc are refused by the schema
  const up = ref && ctx.upstreams().resolved.get(nsName(ref.namespace ?? site.namespace, ref.name));
  const upName = ref ? `${ref.namespace ?? site.namespace}.${ref.name}` : '';
  if (spec?.aws || spec?.azure) {
    const kind = spec.aws ? 'aws' : 'azure';
    if (!ref) {
      sink.problems.push({
        code: 'InvalidSpec',
        message: `${where}.destinationSpec.${kind}: needs an ${kind} Upstream, not a kube Service`,
      });
      return undefined;
    }
    if (!up) return undefined;
    if (lambda) {
      if (!up.awsLambda) {
        sink.problems.push({
          code: 'InvalidSpec',
          message: `${where}.destinationSpec.aws: Upstream ${upName} is not an AWS Lambda upstream`,
        });
        return undefined;
      }
      const aws = lambdaCall(lambda.logicalName, lambda.flags, up.awsLambda, `${where}.destinationSpec.aws`, upName, sink);
      return aws ? { aws } : undefined;
    }
    if (azureName !== undefined) {
      if (!up.azure) {
        sink.problems.push({
          code: 'InvalidSpec',
          message: `${where}.destinationSpec.azure: Upstream ${upName} is not an Azure Functions upstream`,
        });
        return undefined;
      }
      const azure = azureCall(azureName, up.azure, `${where}.destinationSpec.azure`, upName, sink);
      return azure ? { azure } : undefined;
    }
  }
  if (up?.awsLambda || up?.azure) {
    const kind = up.awsLambda ? 'aws' : 'azure';
    sink.warnings.push({
      code: 'InvalidSpec',
      message:
        `${where}: Upstream ${upName} is an ${kind} upstream; without destinationSpec.${kind} naming a function, ` +
        'requests go to it as they are',
    });
  }
  return undefined;
}

function lambdaCall(
  logicalName: string,
  asked: Flags,
  up: LambdaUpstreamIR,
  where: string,
  upName: string,
  sink: BindSink,
): AwsLambdaIR | undefined {
  const name = up.overrides?.logicalName ?? logicalName;
  const fn = up.functions.find((f) => f.logicalName === name);
  if (!fn) {
    const known = up.functions.map((f) => f.logicalName).join(', ') || 'none';
    sink.problems.push({
      code: 'InvalidSpec',
      message:
        `${where}.logicalName: unknown function ${JSON.stringify(name)}: Upstream ${upName} lists ${known} ` +
        'in lambdaFunctions (Legate does not discover Lambda functions; list them there)',
    });
    return undefined;
  }
  const flags = { ...asked, ...up.overrides };
  if (flags.wrapAsApiGateway) {
    sink.problems.push({
      code: 'NotSupported',
      message:
        `${where}.wrapAsApiGateway: Envoy's aws_lambda filter wraps a request in its own JSON event (raw_path, method, headers, ` +
        'query_string_parameters, body, is_base64_encoded), not in the API Gateway event format (httpMethod, path, ' +
        'multiValueHeaders, requestContext, …); use requestTransformation with unwrapAsApiGateway for that event',
    });
    return undefined;
  }
  if (Boolean(flags.requestTransformation) !== Boolean(flags.unwrap)) {
    const set = flags.requestTransformation ? 'requestTransformation' : 'unwrapAsApiGateway (or unwrapAsAlb, responseTransformation)';
    sink.problems.push({
      code: 'NotSupported',
      message:
        `${where}: ${set} alone: Envoy's aws_lambda filter wraps the request in a JSON event and unwraps the function's ` +
        '{statusCode, headers, body, isBase64Encoded} answer together (payload_passthrough: false), never one without the ' +
        'other; set requestTransformation with unwrapAsApiGateway (or responseTransformation), or neither',
    });
    return undefined;
  }
  const ir: AwsLambdaIR = {
    arn: functionArn(fn, up),
    invocationMode: flags.async ? 'ASYNCHRONOUS' : 'SYNCHRONOUS',
    payloadPassthrough: !flags.requestTransformation,
    host: up.host,
  };
  if (up.credentials) ir.credentials = up.credentials;
  return ir;
}

function functionArn(fn: LambdaUpstreamIR['functions'][number], up: LambdaUpstreamIR): string {
  const qualifier = fn.qualifier ? `:${fn.qualifier}` : '';
  if (fn.name.startsWith('arn:')) return `${fn.name}${qualifier}`;
  return `arn:${partition(up.region)}:lambda:${up.region}:${up.accountId ?? ''}:function:${fn.name}${qualifier}`;
}

function azureCall(
  functionName: string,
  up: NonNullable<UpstreamIR['azure']>,
  where: string,
  upName: string,
  sink: BindSink,
): AzureFunctionIR | undefined {
  const fn = up.functions.find((f) => f.name === functionName);
  if (!fn) {
    const known = up.functions.map((f) => f.name).join(', ') || 'none';
    sink.problems.push({
      code: 'InvalidSpec',
      message: `${where}.functionName: unknown function ${JSON.stringify(functionName)}: Upstream ${upName} lists ${known} in functions`,
    });
    return undefined;
  }
  const ir: AzureFunctionIR = { host: up.host, path: `/api/${fn.name}` };
  if (fn.authLevel === 'Anonymous') return ir;
  // as Gloo: the function's own key or the master key for Function, the master key for Admin
  const names = fn.authLevel === 'Function' ? [fn.name, MASTER_KEY] : [MASTER_KEY];
  const key = names.map((n) => up.keys[n]).find((k) => k);
  if (!key) {
    sink.problems.push({
      code: 'InvalidSpec',
      message:
        `${where}: function ${fn.name} (authLevel ${fn.authLevel}) needs a key ${names.join(' or ')} ` +
        `in the secretRef Secret of ${upName}`,
    });
    return undefined;
  }
  ir.secretValue = key;
  return ir;
}
