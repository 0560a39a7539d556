// Contexts. Envoy creates one root context per plugin (per VM instance: main thread and every worker)
// and one stream context per HTTP request, child of the root context of the plugin that handles it.
// A filter registers a root-context factory under its root_id; the root context creates the stream
// contexts.
import { Action, BufferType, LogLevel, Status } from "./enums";
import { getBufferBytes, getPropertyString, log } from "./host";
import { HostBytes } from "./memory";

export class RootContext {
  constructor(public contextId: u32, public rootId: string) {}

  /** proxy_on_vm_start. `vmConfigSize`: bytes of vm_config.configuration. */
  onVmStart(vmConfigSize: u32): bool {
    return true;
  }

  /** proxy_on_configure. Return false to reject the plugin configuration (Envoy NACKs / fails to start). */
  onConfigure(configSize: u32): bool {
    return true;
  }

  /** A stream context for a new request; null means this plugin does not look at the stream. */
  newStreamContext(contextId: u32): StreamContext | null {
    return null;
  }

  /** proxy_on_done. false would postpone deletion until proxy_done (not used here). */
  onDone(): bool {
    return true;
  }

  onDelete(): void {}

  /** The plugin configuration (a StringValue/BytesValue arrives raw), into `out`. Only inside onConfigure. */
  readPluginConfiguration(configSize: u32, out: HostBytes): Status {
    if (configSize == 0) {
      out.release();
      return Status.Ok;
    }
    return getBufferBytes(BufferType.PluginConfiguration, 0, configSize, out);
  }

  /** Envoy prefixes every line with `wasm log <plugin name> <root_id>:`, so no prefix here. */
  logError(message: string): void {
    log(LogLevel.Error, message);
  }

  logInfo(message: string): void {
    log(LogLevel.Info, message);
  }
}

export class StreamContext {
  constructor(public contextId: u32) {}

  onRequestHeaders(numHeaders: u32, endOfStream: bool): Action {
    return Action.Continue;
  }

  onRequestBody(bodySize: u32, endOfStream: bool): Action {
    return Action.Continue;
  }

  onRequestTrailers(numTrailers: u32): Action {
    return Action.Continue;
  }

  onResponseHeaders(numHeaders: u32, endOfStream: bool): Action {
    return Action.Continue;
  }

  /** For stream contexts Envoy ignores the result. */
  onDone(): bool {
    return true;
  }

  onDelete(): void {}
}

/** Root context used when no factory matches the plugin's root_id: it fails configuration. */
class UnknownRootContext extends RootContext {
  onConfigure(configSize: u32): bool {
    let known = "";
    for (let i = 0; i < registrations.length; i++) {
      if (i > 0) known += ", ";
      known += "\"" + registrations[i].rootId + "\"";
    }
    log(LogLevel.Error, "no filter is registered for root_id \"" + this.rootId + "\"; this module provides " + known);
    return false;
  }
}

export type RootContextFactory = (contextId: u32, rootId: string) => RootContext;

class Registration {
  constructor(public rootId: string, public factory: RootContextFactory) {}
}

const registrations = new Array<Registration>();

/** Registers the factory of a filter's root contexts. Call at module top level. */
export function registerRootContext(rootId: string, factory: RootContextFactory): void {
  registrations.push(new Registration(rootId, factory));
}

/** Live contexts by id. */
export const rootContexts = new Map<u32, RootContext>();
export const streamContexts = new Map<u32, StreamContext>();

/** Creates the root context of a plugin. Its root_id comes from the `plugin_root_id` property (the host
 * does not pass it); an empty root_id selects the first registered filter. */
export function createRootContext(contextId: u32): void {
  const prop = getPropertyString(["plugin_root_id"]);
  const rootId = prop !== null ? prop : "";
  let found: Registration | null = null;
  for (let i = 0; i < registrations.length; i++) {
    if (registrations[i].rootId == rootId) {
      found = registrations[i];
      break;
    }
  }
  if (found === null && rootId.length == 0 && registrations.length > 0) found = registrations[0];
  const root = found !== null ? found.factory(contextId, found.rootId) : new UnknownRootContext(contextId, rootId);
  rootContexts.set(contextId, root);
}

export function createStreamContext(contextId: u32, rootContextId: u32): void {
  if (!rootContexts.has(rootContextId)) return;
  const stream = rootContexts.get(rootContextId).newStreamContext(contextId);
  if (stream !== null) streamContexts.set(contextId, stream);
}
