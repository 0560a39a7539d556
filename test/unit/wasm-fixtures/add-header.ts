// Test-only proxy-wasm filter (root_id `add_header`), a user's filter for httpGateway.options.wasm: its plugin
// configuration is `<header>: <value>` (a StringValue), and it sets that header on every response.
// test/e2e/listener-extensions.test.ts builds it with asc and serves it through Envoy.
import { Action, HostBytes, MapType, RootContext, StreamContext, registerRootContext, replaceHeader } from "../../../extensions/wasm/abi";
export {
  proxy_abi_version_0_2_1, malloc, proxy_on_context_create, proxy_on_vm_start, proxy_on_configure,
  proxy_on_response_headers, proxy_on_done, proxy_on_delete,
} from "../../../extensions/wasm/abi/exports";

class AddHeaderStream extends StreamContext {
  constructor(contextId: u32, private root: AddHeaderRoot) {
    super(contextId);
  }

  onResponseHeaders(numHeaders: u32, endOfStream: bool): Action {
    replaceHeader(MapType.HttpResponseHeaders, this.root.name, this.root.value);
    return Action.Continue;
  }
}

class AddHeaderRoot extends RootContext {
  name: ArrayBuffer = new ArrayBuffer(0);
  value: ArrayBuffer = new ArrayBuffer(0);

  onConfigure(configSize: u32): bool {
    const bytes = new HostBytes();
    this.readPluginConfiguration(configSize, bytes);
    const text = bytes.toString();
    bytes.release();
    const colon = text.indexOf(":");
    if (colon <= 0) {
      this.logError("configuration must be '<header>: <value>', got \"" + text + "\"");
      return false;
    }
    this.name = String.UTF8.encode(text.substring(0, colon).trim().toLowerCase());
    this.value = String.UTF8.encode(text.substring(colon + 1).trim());
    return true;
  }

  newStreamContext(contextId: u32): StreamContext | null {
    return new AddHeaderStream(contextId, this);
  }
}

registerRootContext("add_header", (contextId: u32, rootId: string): RootContext => new AddHeaderRoot(contextId, rootId));
