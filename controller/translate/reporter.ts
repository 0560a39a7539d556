// User errors are reported, not thrown: translation always yields a snapshot plus these reports,
// which become each resource's status.
import type { SourceRef } from './ir.js';

export type ReportSeverity = 'error' | 'warning';

export type ReportCode =
  | 'InvalidSpec'
  | 'InvalidRegex'
  | 'UpstreamNotFound'
  | 'UpstreamRejected'
  | 'ServiceNotFound'
  | 'ServicePortNotFound'
  | 'DomainConflict'
  | 'DelegationCycle'
  | 'RouteTableNotFound'
  | 'InvalidTls'
  | 'SecretNotFound'
  | 'ConfigMapNotFound'
  | 'GraphQLApiNotFound'
  | 'GraphQLApiRejected'
  | 'InvalidGraphQLSchema'
  | 'ResolutionNotFound'
  | 'InvalidTemplate'
  | 'AuthConfigNotFound'
  | 'AuthConfigRejected'
  | 'RateLimitConfigNotFound'
  | 'RateLimitConfigRejected'
  | 'VirtualHostOptionNotFound'
  | 'VirtualHostOptionRejected'
  | 'RouteOptionNotFound'
  | 'RouteOptionRejected'
  | 'UpstreamGroupNotFound'
  | 'UpstreamGroupRejected'
  | 'MatchableGatewayNotFound'
  | 'NotSupported'
  | 'EnvoyRejected'
  | 'ServingLastAccepted'
  | 'NotServed'
  | 'RestartRequired'
  | 'Deprecated';

export interface Report {
  resource: SourceRef;
  severity: ReportSeverity;
  code: ReportCode;
  message: string;
}

export class Reporter {
  readonly reports: Report[] = [];

  error(resource: SourceRef, code: ReportCode, message: string): void {
    this.reports.push({ resource, severity: 'error', code, message });
  }

  warn(resource: SourceRef, code: ReportCode, message: string): void {
    this.reports.push({ resource, severity: 'warning', code, message });
  }

  hasErrors(resource: SourceRef): boolean {
    return this.reports.some((r) => r.severity === 'error' && sameRef(r.resource, resource));
  }
}

export function sameRef(a: SourceRef, b: SourceRef): boolean {
  return a.kind === b.kind && a.namespace === b.namespace && a.name === b.name;
}

export function refString(r: SourceRef): string {
  return `${r.kind} ${r.namespace}.${r.name}`;
}
