// The one test of "a JSON object" (not null, not an array) the wire-format modules share.
export type JsonObject = Record<string, unknown>;

export function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * How deep JSON from a client or an upstream may nest (objects and arrays counted): every body is
 * checked once where it is parsed, so no code that walks it recursively (translation, validation,
 * JSON.stringify itself) can run out of stack on it. Deeper than any real request or answer.
 */
export const MAX_JSON_DEPTH = 64;

/**
 * Whether `root` nests objects or arrays deeper than `limit`. Iterative, so a value nested 100,000
 * levels is measured without recursion; it stops at the first container past the limit.
 */
export function nestsDeeperThan(root: unknown, limit = MAX_JSON_DEPTH): boolean {
  if (typeof root !== 'object' || root === null) return false;
  const nodes: object[] = [root];
  const depths: number[] = [1];
  while (nodes.length > 0) {
    const node = nodes.pop()!;
    const depth = depths.pop()!;
    if (depth > limit) return true;
    if (Array.isArray(node)) {
      for (let index = 0; index < node.length; index += 1) {
        const child: unknown = node[index];
        if (typeof child === 'object' && child !== null) { nodes.push(child); depths.push(depth + 1); }
      }
    } else {
      for (const key in node) {
        const child: unknown = (node as JsonObject)[key];
        if (typeof child === 'object' && child !== null) { nodes.push(child); depths.push(depth + 1); }
      }
    }
  }
  return false;
}

/**
 * JSON.parse of text from an upstream (an answer, a stream event, tool arguments), or undefined when
 * it is not JSON or nests past MAX_JSON_DEPTH: callers treat both as a malformed answer, so nothing
 * they walk or serialise again can run out of stack.
 */
export function parseBoundedJson(text: string): unknown {
  let value: unknown;
  try { value = JSON.parse(text); } catch { return undefined; }
  return nestsDeeperThan(value) ? undefined : value;
}
