/**
 * The published document names its shared shapes (components.schemas, headers, parameters) and points
 * to them with `$ref`; tests that read a shape follow the pointer, as a code generator would.
 */
// biome-ignore lint/suspicious/noExplicitAny: an OpenAPI document is untyped JSON here
type Json = any;

/** What a local `$ref` (a JSON pointer within the document) points at; undefined when nothing. */
export function pointerTarget(doc: Json, ref: string): Json {
  if (!ref.startsWith('#/')) return undefined;
  let at: Json = doc;
  for (const raw of ref.slice(2).split('/')) {
    const key = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    at = at?.[key];
  }
  return at;
}

/** The node itself, or the one its `$ref` names (followed until a node without one). */
export function followed(doc: Json, node: Json): Json {
  let at = node;
  for (let hops = 0; at && typeof at.$ref === 'string' && hops < 32; hops++) at = pointerTarget(doc, at.$ref);
  return at;
}
