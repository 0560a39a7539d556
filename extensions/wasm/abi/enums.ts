// Enumerations of proxy-wasm ABI 0.2.1 (values from the spec / proxy-wasm-cpp-host).

/** Result of every host call. */
export enum Status {
  Ok = 0,
  NotFound = 1,
  BadArgument = 2,
  SerializationFailure = 3,
  ParseFailure = 4,
  BadExpression = 5,
  InvalidMemoryAccess = 6,
  Empty = 7,
  CasMismatch = 8,
  ResultMismatch = 9,
  InternalFailure = 10,
  BrokenConnection = 11,
  Unimplemented = 12,
}

/** What a stream callback tells the host. Envoy turns Pause on headers into StopAllIterationAndWatermark,
 * on a body into StopIterationAndBuffer. After proxy_send_local_response the callback stops regardless. */
export enum Action {
  Continue = 0,
  Pause = 1,
}

export enum LogLevel {
  Trace = 0,
  Debug = 1,
  Info = 2,
  Warn = 3,
  Error = 4,
  Critical = 5,
}

export enum BufferType {
  HttpRequestBody = 0,
  HttpResponseBody = 1,
  DownstreamData = 2,
  UpstreamData = 3,
  HttpCallResponseBody = 4,
  GrpcReceiveBuffer = 5,
  VmConfiguration = 6,
  PluginConfiguration = 7,
  CallData = 8,
}

export enum MapType {
  HttpRequestHeaders = 0,
  HttpRequestTrailers = 1,
  HttpResponseHeaders = 2,
  HttpResponseTrailers = 3,
  GrpcReceiveInitialMetadata = 4,
  GrpcReceiveTrailingMetadata = 5,
  HttpCallResponseHeaders = 6,
  HttpCallResponseTrailers = 7,
}

export enum MetricType {
  Counter = 0,
  Gauge = 1,
  Histogram = 2,
}
