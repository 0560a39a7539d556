// The fixtures of no-silent-fields.test.ts: the world a resource under test is translated in, the hand-written values
// for fields whose refinements a generated value cannot pass, and the one list of fields Legate accepts and ignores.

/** Every world resource has this name and namespace, and generated references name it, so any reference resolves. */
export const WORLD_NAME = 'w';
export const WORLD_NAMESPACE = 'default';

const REF = { name: WORLD_NAME, namespace: WORLD_NAMESPACE };
const API_KEY_SECRET = 'w-api-key';
const OAUTH_SECRET = 'w-oauth';
const TO_WORLD = { single: { upstream: REF } };

// a self-signed server certificate (secure.example.com) and a client CA, as in the ssl-mtls translate golden
const CERT = `-----BEGIN CERTIFICATE-----
MIIBxjCCAWugAwIBAgIUYTQkNQbLMTZw0PYD3RQZPXpDs9YwCgYIKoZIzj0EAwIw
HTEbMBkGA1UEAwwSc2VjdXJlLmV4YW1wbGUuY29tMCAXDTI2MTEyMjAxMjMyMloY
DzIxMjYxMDI5MDEyMzIyWjAdMRswGQYDVQQDDBJzZWN1cmUuZXhhbXBsZS5jb20w
WTATBgcqhkjOPQIBBggqhkjOPQMBBwNCAATdwO51H2YZCh4p5Ptys/yMO7FYGgqf
MFROKdX3mQ1bixEKKOlwBwY7y5C7Jnj/h9JUykQSQ+M4D8cRrH8K0DqYo4GGMIGD
MB0GA1UdDgQWBBSsTUuL5dyKNg9QEVbbpS7sGzio0DAfBgNVHSMEGDAWgBSsTUuL
5dyKNg9QEVbbpS7sGzio0DAPBgNVHRMBAf8EBTADAQH/MDAGA1UdEQQpMCeCEnNl
Y3VyZS5leGFtcGxlLmNvbYIRb3RoZXIuZXhhbXBsZS5jb20wCgYIKoZIzj0EAwID
SQAwRgIhANHxGet0qGFVPCGUipMb5b+QAY2Ri6/eUn6E5HcTT6KqAiEAxXG1R36A
uIrC9fd/2NbdLYHiT/VXWoIwHPVlT6EhRtQ=
-----END CERTIFICATE-----
`;
const KEY = `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgtqF7heeEKTp7E33G
Wntb2IVMaNu1jcskSu1d39rxHMKhRANCAATdwO51H2YZCh4p5Ptys/yMO7FYGgqf
MFROKdX3mQ1bixEKKOlwBwY7y5C7Jnj/h9JUykQSQ+M4D8cRrH8K0DqY
-----END PRIVATE KEY-----
`;
const CA = `-----BEGIN CERTIFICATE-----
MIIBpjCCAU2gAwIBAgIUbudpmmpmzZhr26l5gjy2hJ4zijkwCgYIKoZIzj0EAwIw
IDEeMBwGA1UEAwwVTGVnYXRlIHRlc3QgY2xpZW50IENBMCAXDTI2MTEyNTE3MjAz
MloYDzIxMjYxMTAxMTcyMDMyWjAgMR4wHAYDVQQDDBVMZWdhdGUgdGVzdCBjbGll
bnQgQ0EwWTATBgcqhkjOPQIBBggqhkjOPQMBBwNCAARa8HpYsk+WU+bWd8IvsI3/
n3TBstHmEKSas8A1aIgf8ruiXzJb6mdEysjInKKZOiREk49rt0wH4uD3c+efb6cZ
o2MwYTAdBgNVHQ4EFgQUqrU2gSbIsakEdSqTTX+fG5bxsMEwHwYDVR0jBBgwFoAU
qrU2gSbIsakEdSqTTX+fG5bxsMEwDwYDVR0TAQH/BAUwAwEB/zAOBgNVHQ8BAf8E
BAMCAQYwCgYIKoZIzj0EAwIDRwAwRAIgXhcUzM0InSGadc2b9A1slDGrnBVvRDg7
pxhaYH3aHJQCIBKFnRXGpBZpBt2ig5J11XU3aCFvNkI4O/nX9LOVyYaG
-----END CERTIFICATE-----
`;

// a GraphQLSchema may not share the name of a GraphQLApi (one name space for both)
const GRAPHQL_SCHEMA_NAME = 'w-flat';
const JWT_KEY = `-----BEGIN PUBLIC KEY-----
MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEApj2ac/hNZLm/66yoDQJ2
mNtQPX+3RXcTMhLnChtFEsvpDhoMlS0Gakqkmg78OGWs7U4f6m1nD/Jc7UThxxks
o9x676sxxLKxo8TC1w6t47HQHucJE0O5wFNtC8+4jwl4zOBVwnkAEeN+X9jJq2E7
AZ+K6hUycOkWo8ZtZx4rm1bnlDykOa9VCuG3MCKXNexujLIixHOeEOylp7wNedSZ
4Wfc5rM9Cich2F6pIoCwslHYcED+3FZ1ZmQ07h1GG7Aaak4N4XVeJLsDuO88eVkv
FHlGdkW6zSj9HCz10XkSPK7LENbgHxyP6Foqw10MANFBMDQpZfNUHVPSo8IaI+Ot
xQIDAQAB
-----END PUBLIC KEY-----
`;

// the FileDescriptorSet of package shop.v1 (service Books, method GetBook), as in the graphql-grpc translate golden
const SHOP_DESCRIPTORS = [
  'Co0ECg1zaG9wX3YxLnByb3RvEgdzaG9wLnYxIhsKBkF1dGhvchIRCglmdWxsX25hbWUYASABKAkibwoEQm9vaxIKCgJpZBgBIAEo',
  'AxINCgV0aXRsZRgCIAEoCRISCgRraW5kGAMgASgOMgRLaW5kEgwKBHRhZ3MYBCADKAkSFgoGYXV0aG9yGAUgASgLMgZBdXRob3IS',
  'EgoKcGFnZV9jb3VudBgGIAEoBSIsCg5HZXRCb29rUmVxdWVzdBIKCgJpZBgBIAEoAxIOCgZjYWxsZXIYAiABKAkiIQoQTGlzdEJv',
  'b2tzUmVxdWVzdBINCgVsaW1pdBgBIAEoBSIoChFMaXN0Qm9va3NSZXNwb25zZRITCgVib29rcxgBIAMoCzIEQm9vayoxCgRLaW5k',
  'EhQKEEtJTkRfVU5TUEVDSUZJRUQQABIICgRQTEFZEAESCQoFUE9FTVMQAjKuAQoFQm9va3MSMQoHR2V0Qm9vaxIXLnNob3AudjEu',
  'R2V0Qm9va1JlcXVlc3QaDS5zaG9wLnYxLkJvb2sSQgoJTGlzdEJvb2tzEhkuc2hvcC52MS5MaXN0Qm9va3NSZXF1ZXN0Ghouc2hv',
  'cC52MS5MaXN0Qm9va3NSZXNwb25zZRIuCgRTbG93Ehcuc2hvcC52MS5HZXRCb29rUmVxdWVzdBoNLnNob3AudjEuQm9va2IGcHJv',
  'dG8z',
].join('');

const GRAPHQL_SCHEMA = `type Query { ${WORLD_NAME}: String @resolve(name: "${WORLD_NAME}") }`;

const GATEWAYS = ['Gateway', 'MatchableHttpGateway', 'MatchableTcpGateway'];
const GRAPHQL_USERS = ['VirtualService', 'GraphQLApi', 'GraphQLSchema', 'Settings'];

/**
 * The world, one resource of each validated kind (its spec, or body for core kinds), all referencing each other:
 * the VirtualService routes to the Upstream, the UpstreamGroup, the RouteTable, the GraphQLApi and GraphQLSchema,
 * and takes options from the VirtualHostOption, RouteOption, AuthConfig and RateLimitConfig. Gateway and Settings
 * join only as the resource under test (the default gateways serve the world otherwise); the slow ones only for the
 * kinds that use them (`onlyFor`; the VirtualService's routes and sslConfig that need them go too). A field's generated spec
 * is also tried merged into its kind's world spec, so a field that needs siblings gets them from here.
 */
export const WORLD: Record<string, { spec: unknown; name?: string; onlyUnderTest?: boolean; onlyFor?: readonly string[] }> = {
  Upstream: {
    spec: {
      static: {
        hosts: [{ addr: '127.0.0.1', port: 8080, metadata: { 'envoy.lb': { [WORLD_NAME]: WORLD_NAME } } }],
        subsetSpec: { selectors: [{ keys: [WORLD_NAME] }] },
      },
      useHttp2: true,
    },
  },
  UpstreamGroup: { spec: { destinations: [{ destination: { upstream: REF }, weight: 1 }] } },
  VirtualService: {
    spec: {
      virtualHost: {
        domains: ['*'],
        optionsConfigRefs: { delegateOptions: [REF] },
        routes: [
          {
            matchers: [{ prefix: '/' }],
            routeAction: TO_WORLD,
            optionsConfigRefs: { delegateOptions: [REF] },
          },
          { matchers: [{ prefix: '/rt' }], delegateAction: { ref: REF } },
          { matchers: [{ prefix: '/gql' }], graphqlApiRef: REF },
          { matchers: [{ prefix: '/gqls' }], graphqlSchemaRef: { name: GRAPHQL_SCHEMA_NAME, namespace: WORLD_NAMESPACE } },
          {
            matchers: [{ prefix: '/ug' }],
            routeAction: { upstreamGroup: REF },
            options: { extauth: { customAuth: { name: WORLD_NAME } } },
          },
          // an invalid route, for Settings invalidConfigPolicy
          { matchers: [{ prefix: '/missing' }], routeAction: { single: { upstream: { name: 'missing', namespace: WORLD_NAMESPACE } } } },
        ],
      },
      sslConfig: { secretRef: REF },
    },
  },
  RouteTable: { spec: { routes: [{ matchers: [{ prefix: '/rt' }], routeAction: TO_WORLD }] } },
  // options the VirtualService takes from these rather than inline (an inline option would shadow the field under test)
  VirtualHostOption: {
    spec: { options: { jwt: { providers: { [WORLD_NAME]: { issuer: WORLD_NAME, jwks: { local: { key: JWT_KEY } } } } } } },
  },
  RouteOption: { spec: { options: { extauth: { configRef: REF }, rateLimitConfigs: { refs: [REF] } } } },
  AuthConfig: { spec: { configs: [{ oauth2: { accessTokenValidation: { introspectionUrl: 'http://127.0.0.1:9010/introspect' } } }] } },
  RateLimitConfig: {
    spec: {
      raw: {
        descriptors: [{ key: 'generic_key', value: WORLD_NAME, rateLimit: { requestsPerUnit: 1, unit: 'MINUTE' } }],
        rateLimits: [{ actions: [{ genericKey: { descriptorValue: WORLD_NAME } }] }],
      },
    },
  },
  // slow to translate (a schema to build, descriptors to read): only where the resource under test can use them
  GraphQLApi: {
    onlyFor: GRAPHQL_USERS,
    spec: {
      executableSchema: {
        schemaDefinition: GRAPHQL_SCHEMA,
        executor: { local: { resolutions: { [WORLD_NAME]: { mockResolver: { syncResponse: WORLD_NAME } } } } },
        grpcDescriptorRegistry: { protoDescriptorBin: SHOP_DESCRIPTORS },
      },
    },
  },
  GraphQLSchema: {
    onlyFor: GRAPHQL_USERS,
    name: GRAPHQL_SCHEMA_NAME,
    spec: { schemaDefinition: GRAPHQL_SCHEMA, resolutions: { [WORLD_NAME]: { mockResolver: { syncResponse: WORLD_NAME } } } },
  },
  // what a hybrid Gateway delegates to (EXTRA_WORLD's, or the Gateway under test's refs), with matchers of their own
  MatchableHttpGateway: {
    onlyFor: GATEWAYS,
    spec: {
      matcher: { sourcePrefixRanges: [{ addressPrefix: '127.0.0.0', prefixLen: 8 }] },
      httpGateway: {},
    },
  },
  MatchableTcpGateway: {
    onlyFor: GATEWAYS,
    spec: {
      matcher: { sourcePrefixRanges: [{ addressPrefix: '10.0.0.0', prefixLen: 8 }] },
      tcpGateway: { tcpHosts: [{ name: WORLD_NAME, destination: { single: { upstream: REF } } }] },
    },
  },
  // an ssl gateway: the world's VirtualService has sslConfig
  Gateway: { spec: { bindPort: 8443, ssl: true, httpGateway: {} }, onlyUnderTest: true },
  // an ext_proc server and a named ext_authz server, so routes' extProc and customAuth options mean something
  Settings: {
    spec: {
      extProc: { grpcService: { extProcServerRef: REF }, filterStage: { stage: 'AuthZStage' } },
      namedExtauth: { [WORLD_NAME]: { extauthzServerRef: REF } },
    },
  },
  Secret: {
    onlyFor: ['VirtualService', 'Gateway', 'MatchableHttpGateway', 'MatchableTcpGateway', 'Upstream', 'AuthConfig', 'Secret'],
    spec: { type: 'kubernetes.io/tls', stringData: { 'tls.crt': CERT, 'tls.key': KEY, 'ca.crt': CA } },
  },
  Service: { spec: { spec: { ports: [{ port: 80, targetPort: 8080 }], selector: { app: WORLD_NAME } } } },
  // Rego for opaAuth (EXTRA_WORLD's AuthConfig reads it); a grpcJsonTranscoder names its key (not a descriptor: reported)
  ConfigMap: {
    onlyFor: ['ConfigMap', 'Gateway', 'MatchableHttpGateway', 'Upstream'],
    spec: { data: { 'policy.rego': `package ${WORLD_NAME}\n\nallow = true\n` } },
  },
  // two named ports: a Service port without a name matches neither, and its targetPort is the port
  Endpoints: {
    spec: {
      subsets: [
        {
          addresses: [{ ip: '10.0.0.1' }],
          ports: [
            { name: 'a', port: 8080 },
            { name: 'b', port: 8081 },
          ],
        },
      ],
    },
  },
};

/**
 * Values for leaves a generated value cannot pass (a refinement, or translation needs a real one), by the field's path
 * (`Kind path`) or, for every kind, by the end of its path (`url`, `requestTransform.serviceName`). Tried first.
 */
export const LEAF_VALUES: Record<string, unknown[]> = {
  schemaDefinition: [GRAPHQL_SCHEMA],
  // references resolve in the world's namespace
  namespace: [WORLD_NAMESPACE],
  serviceNamespace: [WORLD_NAMESPACE],
  servicePort: [80],
  // Gloo's own processes' addresses (accepted without effect)
  xdsBindAddr: ['0.0.0.0:9977'],
  restXdsBindAddr: ['0.0.0.0:9976'],
  validationBindAddr: ['0.0.0.0:9988'],
  // a user wasm module's digest (the file or URL it names is checked against it)
  sha256: ['09d6004bcdbd28d02daf65bbf94b83b305799ba175ce56927c3e0a72d9266505'],
  // a config status metric label: a JSONPath into the resource
  'labelToPath.*': ['{.metadata.name}'],
  // the cluster Legate renders for the world's Upstream
  staticClusterName: [`${WORLD_NAME}_${WORLD_NAMESPACE}`],
  // a stitched schema's subschema: another API than the one under test
  'subschemas[].name': [GRAPHQL_SCHEMA_NAME],
  'requestTransform.serviceName': ['shop.v1.Books'],
  'requestTransform.methodName': ['GetBook'],
  addressPrefix: ['10.1.0.0'],
  'protoDescriptorConfigMap.key': ['policy.rego'],
  // a JWKS fetched by Envoy comes from a host of the Upstream named beside it
  url: ['https://127.0.0.1:8080/jwks'],
  // an AWS Lambda Upstream: a real region and account, a Lambda API endpoint
  'Upstream aws.region': ['us-east-1'],
  'Upstream aws.awsAccountId': ['123456789012'],
  'Upstream aws.endpoint': ['127.0.0.1:9443'],
};

/**
 * Optional fields to set beside a generated object whose translation needs them, by the end of the object's path
 * (`rbac.policies.*`: a policy of any rbac option).
 */
export const OBJECT_VALUES: Record<string, Record<string, unknown>> = {
  // a RouteTable's routes must sit under the prefix the VirtualService delegates to it
  'routes[]': { matchers: [{ prefix: '/rt' }] },
  customAuth: { name: WORLD_NAME },
  // a listener's ext_authz filter asks the user's server (an httpService is that server's)
  extauth: { extauthzServerRef: REF },
  'jwks.remote': { upstreamRef: REF },
  // a header or query parameter matcher's regex flag applies to its value
  'matchers[].headers[]': { value: WORLD_NAME },
  'matchers[].queryParameters[]': { value: WORLD_NAME },
  bearerCheck: { enabled: true },
  graphqlCheck: { enabled: true },
  invalidConfigPolicy: { replaceInvalidRoutes: true },
  // a hybrid Gateway's delegation: to the world's Matchable gateways
  delegatedHttpGateways: { ref: REF, httpConnectionManagerSettings: { serverName: WORLD_NAME } },
  delegatedTcpGateways: { ref: REF },
  // a TCP host's TLS, a matched gateway's: terminated with the world's certificate (the world's VirtualService has TLS)
  'tcpHosts[].sslConfig': { secretRef: REF },
  'matchedGateways[].matcher': { sslConfig: { secretRef: REF } },
  'matchedGateways[]': { matcher: { sslConfig: { secretRef: REF } } },
  'matcher.sslConfig': { secretRef: REF },
  // certificates from the user's SDS server: the cluster to it is made from targetUri
  'sslConfig.sds': { targetUri: '127.0.0.1:8234' },
  // a wasm filter's config: its type says how the value reaches the plugin
  'filters[].config': { value: WORLD_NAME },
  // a user wasm module: Envoy fetches it and checks its sha256 (the controller reads nothing)
  'wasm.filters[]': { uri: 'https://127.0.0.1:8080/filter.wasm' },
  'rbac.policies.*': { principals: [{ jwtPrincipal: { claims: { sub: WORLD_NAME } } }] },
  // a raw rate-limit entry's limit override goes with the entry its actions make
  'ratelimit.rateLimits[]': { actions: [{ remoteAddress: {} }] },
  'ratelimitEarly.rateLimits[]': { actions: [{ remoteAddress: {} }] },
  'ratelimitRegular.rateLimits[]': { actions: [{ remoteAddress: {} }] },
};

/** Whole specs for fields no generated spec reaches (`Kind path` → spec), tried after the generated ones. */
// a user wasm filter whose config is a Struct: its value is an object
const WASM_STRUCT = {
  filters: [
    {
      uri: 'https://127.0.0.1:8080/filter.wasm',
      sha256: '09d6004bcdbd28d02daf65bbf94b83b305799ba175ce56927c3e0a72d9266505',
      config: { '@type': 'type.googleapis.com/google.protobuf.Struct', value: { [WORLD_NAME]: WORLD_NAME } },
    },
  ],
};

const CREDENTIALS_SECRET = 'w-credentials';
const CREDENTIALS_REF = { name: CREDENTIALS_SECRET, namespace: WORLD_NAMESPACE };
const API_KEY_REF = { name: API_KEY_SECRET, namespace: WORLD_NAMESPACE };
const BASIC_SHA1 = {
  realm: WORLD_NAME,
  encryption: { sha1: {} },
  userList: { users: { [WORLD_NAME]: { salt: 'TYiryv0/', hashedPassword: '010eb058a59f4ac5ba05639b0263cf91b4345fd6' } } },
};
const LDAP = {
  address: '127.0.0.1:389',
  userDnTemplate: 'uid=%s,ou=people,dc=example,dc=org',
  membershipAttributeName: 'isMemberOf',
  allowedGroups: ['cn=w,ou=groups,dc=example,dc=org'],
  searchFilter: '(objectClass=person)',
  pool: { maxSize: 3, initialSize: 1 },
  groupLookupSettings: { credentialsSecretRef: CREDENTIALS_REF, checkGroupsWithServiceAccount: true },
};
const OPA_SERVER = {
  package: WORLD_NAME,
  ruleName: 'allow',
  serverAddr: '127.0.0.1:8181',
  options: { fastInputConversion: true },
};
const PASS_GRPC = { grpc: { address: '127.0.0.1:9001', connectionTimeout: '2s' }, config: { [WORLD_NAME]: WORLD_NAME } };
const HMAC = { secretRefs: { secretRefs: [CREDENTIALS_REF] }, parametersInHeaders: {} };
const KEYS_WITH_META = (required: boolean) => ({
  apiKeySecretRefs: [API_KEY_REF],
  headersFromMetadataEntry: { 'x-user': { name: required ? 'user-id' : 'api-key', required } },
});

export const SPECS: Record<string, unknown> = {
  // TLS inside a CONNECT tunnel is rendered only with the proxy's hostname beside it
  'Upstream httpConnectSslConfig.alpnProtocols[]': {
    static: { hosts: [{ addr: '127.0.0.1', port: 3128 }] },
    httpProxyHostname: 'api.example.com:443',
    httpConnectSslConfig: { alpnProtocols: ['h2'] },
  },
  'AuthConfig configs[].apiKeyAuth.headersFromMetadata.*.name': {
    configs: [{ apiKeyAuth: { apiKeySecretRefs: [API_KEY_REF], headersFromMetadata: { 'x-user': { name: 'api-key' } } } }],
  },
  'AuthConfig configs[].apiKeyAuth.headersFromMetadata.*.required': {
    configs: [{ apiKeyAuth: { apiKeySecretRefs: [API_KEY_REF], headersFromMetadata: { 'x-user': { name: 'user-id', required: true } } } }],
  },
  'AuthConfig configs[].apiKeyAuth.headersFromMetadataEntry.*.name': { configs: [{ apiKeyAuth: KEYS_WITH_META(false) }] },
  'AuthConfig configs[].apiKeyAuth.headersFromMetadataEntry.*.required': { configs: [{ apiKeyAuth: KEYS_WITH_META(true) }] },
  'AuthConfig configs[].basicAuth.realm': { configs: [{ basicAuth: BASIC_SHA1 }] },
  'AuthConfig configs[].basicAuth.userList.users.*.salt': { configs: [{ basicAuth: BASIC_SHA1 }] },
  'AuthConfig configs[].basicAuth.userList.users.*.hashedPassword': { configs: [{ basicAuth: BASIC_SHA1 }] },
  'AuthConfig configs[].ldap.membershipAttributeName': { configs: [{ ldap: LDAP }] },
  'AuthConfig configs[].ldap.pool.maxSize': { configs: [{ ldap: LDAP }] },
  'AuthConfig configs[].ldap.searchFilter': { configs: [{ ldap: LDAP }] },
  'AuthConfig configs[].ldap.groupLookupSettings.checkGroupsWithServiceAccount': { configs: [{ ldap: LDAP }] },
  'AuthConfig configs[].opaServerAuth.options.fastInputConversion': { configs: [{ opaServerAuth: OPA_SERVER }] },
  'AuthConfig configs[].passThroughAuth.grpc.connectionTimeout': { configs: [{ passThroughAuth: PASS_GRPC }] },
  'AuthConfig configs[].passThroughAuth.config.*': { configs: [{ passThroughAuth: PASS_GRPC }] },
  ...Object.fromEntries(
    (
      [
        ['numRetries', { numRetries: 2 }],
        ['retryBackOff.baseInterval', { retryBackOff: { baseInterval: '0.2s' } }],
        ['retryBackOff.maxInterval', { retryBackOff: { baseInterval: '0.1s', maxInterval: '3s' } }],
      ] as const
    ).map(([field, retryPolicy]) => [
      `AuthConfig configs[].passThroughAuth.grpc.retryPolicy.${field}`,
      { configs: [{ passThroughAuth: { ...PASS_GRPC, grpc: { ...PASS_GRPC.grpc, retryPolicy } } }] },
    ]),
  ),
  'AuthConfig configs[].hmacAuth.secretRefs.secretRefs[].name': { configs: [{ hmacAuth: HMAC }] },
  'AuthConfig configs[].hmacAuth.secretRefs.secretRefs[].namespace': { configs: [{ hmacAuth: HMAC }] },
  'Gateway httpGateway.options.wasm.filters[].config.value.*': {
    bindPort: 8443,
    ssl: true,
    httpGateway: { options: { wasm: WASM_STRUCT } },
  },
  'Gateway hybridGateway.matchedGateways[].httpGateway.options.wasm.filters[].config.value.*': {
    bindPort: 8443,
    hybridGateway: { matchedGateways: [{ matcher: { sslConfig: { secretRef: REF } }, httpGateway: { options: { wasm: WASM_STRUCT } } }] },
  },
  'MatchableHttpGateway httpGateway.options.wasm.filters[].config.value.*': {
    matcher: {},
    httpGateway: { options: { wasm: WASM_STRUCT } },
  },
  ...Object.fromEntries(
    (
      [
        ['oidcAuthorizationCode.authEndpointQueryParams.*', { authEndpointQueryParams: { prompt: 'login' } }],
        ['oidcAuthorizationCode.tokenEndpointQueryParams.*', { tokenEndpointQueryParams: { audience: 'api' } }],
        ['oidcAuthorizationCode.scopes[]', { scopes: ['email'] }],
        ['oidcAuthorizationCode.discoveryOverride.idTokenAlgs[]', { discoveryOverride: { idTokenAlgs: ['ES256'] } }],
        ['oidcAuthorizationCode.dynamicMetadataFromClaims.*', { dynamicMetadataFromClaims: { email: 'email' } }],
        ['oauth2.authEndpointQueryParams.*', { authEndpointQueryParams: { prompt: 'login' } }],
        ['oauth2.scopes[]', { scopes: ['read'] }],
        ['oauth2.tokenEndpointQueryParams.*', { tokenEndpointQueryParams: { audience: 'api' } }],
      ] as const
    ).map(([path, fields]) => {
      const [kind] = path.split('.') as ['oidcAuthorizationCode' | 'oauth2'];
      const base =
        kind === 'oidcAuthorizationCode'
          ? { issuerUrl: 'http://127.0.0.1:9010/' }
          : { authEndpoint: 'http://127.0.0.1:9010/auth', tokenEndpoint: 'http://127.0.0.1:9010/token' };
      const step = {
        clientId: 'gloo',
        clientSecretRef: { name: OAUTH_SECRET, namespace: WORLD_NAMESPACE },
        appUrl: 'http://127.0.0.1:8080/',
        callbackPath: '/callback',
        ...base,
        ...fields,
      };
      return [`AuthConfig configs[].oauth2.${path}`, { configs: [{ oauth2: { [kind]: step } }] }];
    }),
  ),
  'AuthConfig configs[].apiKeyAuth.headerName': {
    configs: [{ apiKeyAuth: { headerName: 'x-api-key', apiKeySecretRefs: [{ name: API_KEY_SECRET, namespace: WORLD_NAMESPACE }] } }],
  },
};

/** Resources beside the world's one per kind (by kind, name and spec or body). */
export const EXTRA_WORLD: { kind: string; name: string; spec: unknown; onlyFor?: readonly string[] }[] = [
  // a hybrid Gateway, for the Matchable gateways to be delegated to
  {
    kind: 'Gateway',
    name: 'w-hybrid',
    onlyFor: ['MatchableHttpGateway', 'MatchableTcpGateway'],
    spec: { bindPort: 8081, hybridGateway: { delegatedHttpGateways: { ref: REF }, delegatedTcpGateways: { ref: REF } } },
  },
  // an Upstream with TLS and no parameters of its own, for Settings upstreamOptions.sslParameters
  {
    kind: 'Upstream',
    name: 'w-tls',
    spec: { static: { hosts: [{ addr: '127.0.0.2', port: 8443 }] }, sslConfig: { sni: 'w.example.com' } },
  },
  { kind: 'Secret', name: API_KEY_SECRET, spec: { type: 'extauth.solo.io/apikey', stringData: { 'api-key': 'no-silent-fields-key' } } },
  // credentials for ldap's service account and hmacAuth
  { kind: 'Secret', name: CREDENTIALS_SECRET, spec: { stringData: { username: WORLD_NAME, password: 'no-silent-fields-secret' } } },
  // an AuthConfig reading the world's ConfigMap
  {
    kind: 'AuthConfig',
    name: 'w-opa',
    onlyFor: ['ConfigMap'],
    spec: { configs: [{ opaAuth: { modules: [REF], query: `data.${WORLD_NAME}.allow` } }] },
  },
  {
    kind: 'Secret',
    name: OAUTH_SECRET,
    spec: { type: 'extauth.solo.io/oauth', stringData: { 'client-secret': 'no-silent-fields-secret' } },
  },
];

const GLOO_PROCESS = "the address or files of Gloo's own processes; Legate's come from its command line and chart";
const STORAGE = '`{}`: the storage is the directory Legate runs on or, with --kubernetes, the API server (the command line chooses)';
const RE2 = "RE2 is Envoy's only regex engine: googleRe2 (deprecated in Envoy) changes nothing";
const K8S = 'a Kubernetes field Legate does not need (it reads the ones the schema declares)';

/**
 * Fields Legate accepts and does not act on, with why: docs/resources.md, "Accepted and ignored fields", lists each.
 * Keys are `Kind path` as the test prints them.
 */
export const ACCEPTED_AND_IGNORED: Record<string, string> = {
  'VirtualService displayName': "a name for Gloo's UI; Legate's status and CLI use metadata.name",
  'Upstream discoveryMetadata.labels.*': "labels Gloo's discovery copied from a Service; nothing in Legate selects Upstreams by them",
  'Upstream disableIstioAutoMtls': 'Legate has no Istio integration, so there is no automatic mTLS to turn off',
  'Gateway options.accessLoggingService.accessLog[].filter.headerFilter.header.safeRegexMatch.googleRe2': RE2,
  'Gateway options.listenerAccessLoggingService.accessLog[].filter.headerFilter.header.safeRegexMatch.googleRe2': RE2,
  'Settings extProc.mutationRules.allowExpression.googleRe2': RE2,
  'Settings extProc.mutationRules.disallowExpression.googleRe2': RE2,
  'Settings extProc.forwardRules.allowedHeaders.patterns[].safeRegex.googleRe2': RE2,
  'Settings extProc.forwardRules.disallowedHeaders.patterns[].safeRegex.googleRe2': RE2,
  'Settings namedExtauth.*.transportApiVersion': 'V3 is the only value, and the only version Legate speaks',
  'Settings refreshRate': 'the directory is rescanned every second and Kubernetes informers re-list when a watch breaks: no resync to tune',
  'Settings kubernetesConfigSource': STORAGE,
  'Settings kubernetesSecretSource': STORAGE,
  'Settings kubernetesArtifactSource': STORAGE,
  'Settings gloo.xdsBindAddr': GLOO_PROCESS,
  'Settings gloo.restXdsBindAddr': GLOO_PROCESS,
  'Settings gloo.validationBindAddr': GLOO_PROCESS,
  'Settings gloo.proxyDebugBindAddr': GLOO_PROCESS,
  'Settings gateway.validationServerAddr': GLOO_PROCESS,
  'Settings gateway.validation.proxyValidationServerAddr': GLOO_PROCESS,
  'Settings gateway.validation.validationWebhookTlsCert': GLOO_PROCESS,
  'Settings gateway.validation.validationWebhookTlsKey': GLOO_PROCESS,
  'Settings gateway.validation.validationServerGrpcMaxSizeBytes': GLOO_PROCESS,
  'Settings gloo.removeUnusedFilters': 'Legate renders only the filters some route uses, whatever the value',
  'Settings gateway.persistProxySpec': 'Legate serves Proxies from the controller (legatectl get proxy)',
  'Settings gateway.compressedProxySpec': 'Legate serves Proxies from the controller (legatectl get proxy)',
  'Settings gateway.alwaysSortRouteTableRoutes': 'deprecated in Gloo, ignored there too',
  'Settings gateway.validation.ignoreGlooValidationFailure': 'deprecated in Gloo, ignored there too',
  'Settings gateway.validation.disableTransformationValidation': 'Legate has no transformation filter to validate',
  'Settings discovery.fdsMode': 'Legate has no function discovery, so every mode discovers no functions',
  'Settings gloo.istioOptions.appendXForwardedHost': 'Gloo reads it only with the Istio integration on, which Legate refuses',
  'Settings consoleOptions.readOnly': "Legate's console is read-only whatever the value; false permits edits it does not offer",
  'Settings extauth.transportApiVersion': 'V3 is the only value, and the only version Legate speaks',
  'Gateway httpGateway.options.extauth.transportApiVersion': 'V3 is the only value, and the only version Legate speaks',
  'MatchableHttpGateway httpGateway.options.extauth.transportApiVersion': 'V3 is the only value, and the only version Legate speaks',
  'GraphQLApi statPrefix': 'the GraphQL service keeps no per-API stats',
  'GraphQLApi executableSchema.executor.local.resolutions.*.statPrefix': 'the GraphQL service keeps no per-resolver stats',
  'GraphQLApi executableSchema.executor.local.resolutions.*.restResolver.spanName': 'the GraphQL service makes no per-resolver spans',
  'GraphQLApi executableSchema.executor.local.resolutions.*.grpcResolver.spanName': 'the GraphQL service makes no per-resolver spans',
  'GraphQLApi executableSchema.executor.remote.spanName': 'the GraphQL service makes no per-resolver spans',
  'GraphQLApi options.logSensitiveInfo': 'the GraphQL service never logs request contents',
  'GraphQLSchema resolutions.*.statPrefix': 'the GraphQL service keeps no per-resolver stats',
  'GraphQLSchema resolutions.*.restResolver.spanName': 'the GraphQL service makes no per-resolver spans',
  'Service <other>': K8S,
  'Service spec.<other>': K8S,
  'Service spec.ports[].<other>': K8S,
  'Service spec.ports[].protocol': 'Legate proxies what the Upstream says (useHttp2 and the like), not the port protocol',
  'Service spec.ports[].appProtocol': 'Legate proxies what the Upstream says (useHttp2 and the like), not the port protocol',
  'Endpoints <other>': K8S,
  'Endpoints subsets[].<other>': K8S,
  'Endpoints subsets[].addresses[].<other>': K8S,
  'Endpoints subsets[].addresses[].hostname': 'Envoy reaches an endpoint by its IP',
  'Endpoints subsets[].notReadyAddresses[].ip': 'an address that is not ready gets no traffic',
  'Endpoints subsets[].notReadyAddresses[].<other>': K8S,
  'Endpoints subsets[].ports[].protocol': 'Legate proxies what the Upstream says (useHttp2 and the like), not the port protocol',
  'Endpoints subsets[].ports[].<other>': K8S,
  'Secret type': 'Legate reads a Secret by its keys (tls.crt, tls.key, ca.crt, api-key …), whatever its type says',
  'Secret <other>': K8S,
  'ConfigMap <other>': K8S,
  'ConfigMap binaryData.*': 'binary entries are not Rego text; opaAuth reads the data entries',
};

/** Fields read outside translation (by the controller's sources), so no run of the pipeline reads them. */
export const READ_OUTSIDE_TRANSLATION: Record<string, string> = {
  'Settings watchNamespaces[]': 'the Kubernetes source watches these namespaces (controller/source/kubernetes)',
  'Settings watchNamespaceSelectors[].matchLabels.*': 'the Kubernetes source watches the namespaces these select',
  'Settings watchNamespaceSelectors[].matchExpressions[].key': 'the Kubernetes source watches the namespaces these select',
  'Settings watchNamespaceSelectors[].matchExpressions[].operator': 'the Kubernetes source watches the namespaces these select',
  'Settings watchNamespaceSelectors[].matchExpressions[].values[]': 'the Kubernetes source watches the namespaces these select',
  'Settings gateway.validation.alwaysAccept': 'the validating webhook (controller/validation): what it refuses',
  'Settings gateway.validation.allowWarnings': 'the validating webhook (controller/validation): what it refuses',
  'Settings gateway.validation.serverEnabled': 'the validating webhook (controller/validation): whether it refuses anything',
  'Settings consoleOptions.apiExplorerEnabled': 'the console (console/server): false turns its GraphQL explorer off',
  'Settings kubernetes.rateLimits.QPS': "the Kubernetes client's requests per second (controller/source/kubernetes/connections.ts)",
  'Settings kubernetes.rateLimits.burst': "the Kubernetes client's burst above QPS (controller/source/kubernetes/connections.ts)",
  'Settings observabilityOptions.grafanaIntegration.defaultDashboardFolderId': 'legate observability: the Grafana folder of its dashboards',
  'Settings observabilityOptions.grafanaIntegration.dashboardPrefix': "legate observability: its dashboards' uid and title prefix",
  'Settings observabilityOptions.grafanaIntegration.extraMetricQueryParameters': "legate observability: added to its dashboards' queries",
  'Settings observabilityOptions.configStatusMetricLabels.*.labelToPath.*': "the controller's config status metrics (/metrics)",
};
