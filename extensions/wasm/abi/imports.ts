// Host functions of proxy-wasm ABI 0.2.1 (module `env`), exactly as Envoy's host (proxy-wasm-cpp-host)
// types them: every parameter and result is i32 except the metric value (i64). Envoy checks import
// types exactly, so only the functions the filters use are declared here; an unused declaration is not
// imported (asc drops it), so it does no harm either.
//
// `ret_*` parameters are out-pointers the host writes into. Buffers it returns through a `ret_ptr_ptr`
// were allocated by calling this module's `malloc` export and are owned (freed) by the module.

// @ts-ignore: decorator
@external("env", "proxy_log")
export declare function proxy_log(level: u32, message_ptr: usize, message_size: usize): u32;

// @ts-ignore: decorator
@external("env", "proxy_get_log_level")
export declare function proxy_get_log_level(ret_level_ptr: usize): u32;

// @ts-ignore: decorator
@external("env", "proxy_get_buffer_bytes")
export declare function proxy_get_buffer_bytes(
  buffer_type: u32, start: u32, max_size: u32, ret_ptr_ptr: usize, ret_size_ptr: usize,
): u32;

// @ts-ignore: decorator
@external("env", "proxy_get_header_map_value")
export declare function proxy_get_header_map_value(
  map_type: u32, key_ptr: usize, key_size: usize, ret_ptr_ptr: usize, ret_size_ptr: usize,
): u32;

// @ts-ignore: decorator
@external("env", "proxy_replace_header_map_value")
export declare function proxy_replace_header_map_value(
  map_type: u32, key_ptr: usize, key_size: usize, value_ptr: usize, value_size: usize,
): u32;

// @ts-ignore: decorator
@external("env", "proxy_remove_header_map_value")
export declare function proxy_remove_header_map_value(map_type: u32, key_ptr: usize, key_size: usize): u32;

// @ts-ignore: decorator
@external("env", "proxy_get_current_time_nanoseconds")
export declare function proxy_get_current_time_nanoseconds(ret_time_ptr: usize): u32;

// @ts-ignore: decorator
@external("env", "proxy_get_header_map_pairs")
export declare function proxy_get_header_map_pairs(map_type: u32, ret_ptr_ptr: usize, ret_size_ptr: usize): u32;

// @ts-ignore: decorator
@external("env", "proxy_send_local_response")
export declare function proxy_send_local_response(
  status_code: u32,
  details_ptr: usize, details_size: usize,
  body_ptr: usize, body_size: usize,
  headers_ptr: usize, headers_size: usize,
  grpc_status: i32,
): u32;

// @ts-ignore: decorator
@external("env", "proxy_get_property")
export declare function proxy_get_property(path_ptr: usize, path_size: usize, ret_ptr_ptr: usize, ret_size_ptr: usize): u32;

// @ts-ignore: decorator
@external("env", "proxy_define_metric")
export declare function proxy_define_metric(metric_type: u32, name_ptr: usize, name_size: usize, ret_id_ptr: usize): u32;

// @ts-ignore: decorator
@external("env", "proxy_increment_metric")
export declare function proxy_increment_metric(metric_id: u32, delta: i64): u32;

// @ts-ignore: decorator
@external("env", "proxy_get_shared_data")
export declare function proxy_get_shared_data(
  key_ptr: usize, key_size: usize, ret_value_ptr_ptr: usize, ret_value_size_ptr: usize, ret_cas_ptr: usize,
): u32;

// @ts-ignore: decorator
@external("env", "proxy_set_shared_data")
export declare function proxy_set_shared_data(key_ptr: usize, key_size: usize, value_ptr: usize, value_size: usize, cas: u32): u32;
