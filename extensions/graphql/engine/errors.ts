// Errors a resolver raises. graphql-js copies `extensions` of the original error into the located
// GraphQLError, so clients see `errors[].extensions.code` (and `http.status` for backend statuses).

export type UpstreamErrorCode =
  'UPSTREAM_HTTP_ERROR' | 'UPSTREAM_UNAVAILABLE' | 'UPSTREAM_TIMEOUT' | 'UPSTREAM_BAD_RESPONSE' | 'INTERNAL_SERVER_ERROR';

export interface UpstreamErrorExtensions {
  code: UpstreamErrorCode;
  /** the resolution name (`Type|field`) */
  resolver: string;
  http?: { status: number };
  [key: string]: unknown;
}

export class UpstreamError extends Error {
  readonly extensions: UpstreamErrorExtensions;
  constructor(message: string, extensions: UpstreamErrorExtensions, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'UpstreamError';
    this.extensions = extensions;
  }
  get code(): UpstreamErrorCode {
    return this.extensions.code;
  }
}

/** An error raised while calling a backend, before we know which resolver (field) it belongs to; shared by
 * every field that made the same call (dedup), each turns it into its own UpstreamError. */
export class CallError extends Error {
  constructor(
    readonly code: Exclude<UpstreamErrorCode, 'INTERNAL_SERVER_ERROR'>,
    message: string,
    readonly status?: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'CallError';
  }
}
