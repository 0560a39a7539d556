// The shape translation hands to the xDS layer: per type URL, named resources in Envoy's JSON form
// (snake_case fields, Any as {'@type': …}, Duration as {seconds, nanos}).

export interface XdsResource {
  readonly name: string;
  readonly resource: object;
}

/** type URL -> resources of that type. A missing type means "no resources of this type". */
export type XdsSnapshot = ReadonlyMap<string, readonly XdsResource[]>;
