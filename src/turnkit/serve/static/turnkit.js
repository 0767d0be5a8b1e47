// turnkit.js: the browser (and Node) client of turnkit's sync stream. An ES module, no dependency, no build.
//
//   import { applyOps, subscribe } from "/static/turnkit.js";
//   const sub = subscribe(`/v1/streams/${id}/events`, {
//     onValue: (value, sub) => render(value, sub.partial),   // after every snapshot / patch
//     onEnd: ({ value, error }) => done(value, error),
//   });
//
// Protocol (docs/sync.md): SSE events `snapshot` (data: the client value), `patch` (data: a JSON array
// of JSON Patch operations plus `append`), `end` (data: {"value": v} or {"error": {code, message, ...}});
// every event has `id: <seq>`. EventSource resends the last id as Last-Event-ID when it reconnects, and
// the server replays what was missed (or sends a fresh snapshot).

/** A patch that cannot be applied: `opIndex` is the operation's index in its batch, `path` its path. */
export class JsonPatchError extends Error {
  constructor(message, opIndex, path) {
    super(opIndex === undefined ? message : `operation ${opIndex}${path === undefined ? "" : ` (${JSON.stringify(path)})`}: ${message}`);
    this.name = "JsonPatchError";
    this.opIndex = opIndex;
    this.path = path;
  }
}

class Fail extends Error {}

const hasOwn = (object, key) => Object.prototype.hasOwnProperty.call(object, key);
const isObject = (value) => value !== null && typeof value === "object" && !Array.isArray(value);
const isContainer = (value) => value !== null && typeof value === "object";

function setMember(object, key, value) {
  if (key === "__proto__") {
    Object.defineProperty(object, key, { value, writable: true, enumerable: true, configurable: true });
  } else {
    object[key] = value;
  }
}

/** A deep copy of a JSON value (iterative: any depth). */
export function jsonCopy(value) {
  if (!isContainer(value)) return value;
  const root = Array.isArray(value) ? [] : {};
  const stack = [[value, root]];
  while (stack.length) {
    const [source, target] = stack.pop();
    const keys = Array.isArray(source) ? source.keys() : Object.keys(source);
    for (const key of keys) {
      let item = source[key];
      if (isContainer(item)) {
        const copy = Array.isArray(item) ? [] : {};
        stack.push([item, copy]);
        item = copy;
      }
      if (Array.isArray(target)) target.push(item);
      else setMember(target, key, item);
    }
  }
  return root;
}

/** JSON equality (`test`): numbers by value, object key order ignored. */
export function jsonEqual(a, b) {
  const stack = [[a, b]];
  while (stack.length) {
    const [x, y] = stack.pop();
    if (Array.isArray(x)) {
      if (!Array.isArray(y) || x.length !== y.length) return false;
      for (let i = 0; i < x.length; i++) stack.push([x[i], y[i]]);
    } else if (isObject(x)) {
      if (!isObject(y)) return false;
      const keys = Object.keys(x);
      if (keys.length !== Object.keys(y).length) return false;
      for (const key of keys) {
        if (!hasOwn(y, key)) return false;
        stack.push([x[key], y[key]]);
      }
    } else if (x !== y) {
      return false;
    }
  }
  return true;
}

/** The unescaped tokens of a JSON Pointer ("" is the whole document). */
export function splitPointer(pointer) {
  if (typeof pointer !== "string") throw new Fail(`a JSON Pointer must be a string, not ${typeof pointer}`);
  if (pointer === "") return [];
  if (pointer[0] !== "/") throw new Fail("a JSON Pointer must be empty or start with '/'");
  return pointer.slice(1).split("/").map((token) => {
    if (!token.includes("~")) return token;
    if (/~(?![01])/.test(token)) throw new Fail("'~' in a JSON Pointer must be followed by 0 or 1");
    return token.replace(/~1/g, "/").replace(/~0/g, "~");
  });
}

/** Escape one key as a JSON Pointer token. */
export function escapeToken(key) {
  return String(key).replace(/~/g, "~0").replace(/\//g, "~1");
}

function arrayIndex(token, length, allowEnd) {
  if (token === "-") {
    if (allowEnd) return length;
    throw new Fail("'-' (the end of the array) names no element here");
  }
  if (!/^(0|[1-9][0-9]*)$/.test(token)) throw new Fail(`${JSON.stringify(token)} is not an array index`);
  const index = Number(token);
  if (index > length || (index === length && !allowEnd)) {
    throw new Fail(`array index ${index} is out of range (length ${length})`);
  }
  return index;
}

// One batch works on copies of the containers it touches (copy-on-write): the input document is never
// modified, untouched subtrees are shared with it, and every container on a changed path is new (so
// frameworks that compare references see the change).
class Batch {
  constructor(doc) {
    this.doc = doc;
    this.fresh = new Set(); // containers created by this batch: safe to modify
  }

  own(value) {
    if (!isContainer(value) || this.fresh.has(value)) return value;
    const copy = Array.isArray(value) ? value.slice() : Object.assign({}, value);
    if (!Array.isArray(value) && hasOwn(value, "__proto__")) setMember(copy, "__proto__", value.__proto__);
    this.fresh.add(copy);
    return copy;
  }

  // The value at tokens, without copying (it must exist).
  resolve(tokens) {
    let node = this.doc;
    for (const token of tokens) {
      if (Array.isArray(node)) node = node[arrayIndex(token, node.length, false)];
      else if (isObject(node)) {
        if (!hasOwn(node, token)) throw new Fail(`member ${JSON.stringify(token)} does not exist`);
        node = node[token];
      } else throw new Fail(`cannot descend into a ${node === null ? "null" : typeof node} with ${JSON.stringify(token)}`);
    }
    return node;
  }

  // The parent container of tokens, owned by this batch (copied along the way).
  parent(tokens) {
    this.doc = this.own(this.doc);
    let node = this.doc;
    for (let i = 0; i < tokens.length - 1; i++) {
      const token = tokens[i];
      let slot;
      if (Array.isArray(node)) slot = arrayIndex(token, node.length, false);
      else if (isObject(node)) {
        if (!hasOwn(node, token)) throw new Fail(`member ${JSON.stringify(token)} does not exist`);
        slot = token;
      } else throw new Fail(`cannot descend into a ${node === null ? "null" : typeof node} with ${JSON.stringify(token)}`);
      const child = this.own(node[slot]);
      if (child !== node[slot]) {
        if (Array.isArray(node)) node[slot] = child;
        else setMember(node, slot, child);
      }
      node = child;
    }
    if (!isContainer(node)) {
      throw new Fail(`the parent of the target is a ${node === null ? "null" : typeof node}, not an object or array`);
    }
    return node;
  }

  add(tokens, value) {
    if (!tokens.length) {
      this.doc = value;
      return;
    }
    const parent = this.parent(tokens);
    const last = tokens[tokens.length - 1];
    if (Array.isArray(parent)) parent.splice(arrayIndex(last, parent.length, true), 0, value);
    else setMember(parent, last, value);
  }

  remove(tokens) {
    if (!tokens.length) throw new Fail("cannot remove the whole document");
    const parent = this.parent(tokens);
    const last = tokens[tokens.length - 1];
    if (Array.isArray(parent)) return parent.splice(arrayIndex(last, parent.length, false), 1)[0];
    if (!hasOwn(parent, last)) throw new Fail(`member ${JSON.stringify(last)} does not exist`);
    const removed = parent[last];
    delete parent[last];
    return removed;
  }

  replace(tokens, value) {
    if (!tokens.length) {
      this.doc = value;
      return;
    }
    const parent = this.parent(tokens);
    const last = tokens[tokens.length - 1];
    if (Array.isArray(parent)) parent[arrayIndex(last, parent.length, false)] = value;
    else {
      if (!hasOwn(parent, last)) throw new Fail(`member ${JSON.stringify(last)} does not exist`);
      setMember(parent, last, value);
    }
  }

  append(tokens, text) {
    if (typeof text !== "string") throw new Fail(`append needs a string value, not ${typeof text}`);
    if (!tokens.length) {
      if (typeof this.doc !== "string") throw new Fail(`append target is a ${typeof this.doc}, not a string`);
      this.doc += text;
      return;
    }
    const parent = this.parent(tokens);
    const last = tokens[tokens.length - 1];
    let slot;
    if (Array.isArray(parent)) slot = arrayIndex(last, parent.length, false);
    else {
      if (!hasOwn(parent, last)) throw new Fail(`member ${JSON.stringify(last)} does not exist`);
      slot = last;
    }
    if (typeof parent[slot] !== "string") throw new Fail(`append target is a ${typeof parent[slot]}, not a string`);
    parent[slot] += text;
  }

  apply(op) {
    if (!isObject(op)) throw new Fail(`an operation must be an object, not ${Array.isArray(op) ? "array" : typeof op}`);
    const member = (name) => {
      if (!hasOwn(op, name)) throw new Fail(`missing ${JSON.stringify(name)} member`);
      return op[name];
    };
    const name = member("op");
    const tokens = splitPointer(member("path"));
    switch (name) {
      case "add":
        return this.add(tokens, jsonCopy(member("value")));
      case "append":
        return this.append(tokens, member("value"));
      case "replace":
        return this.replace(tokens, jsonCopy(member("value")));
      case "remove":
        return void this.remove(tokens);
      case "test":
        if (!jsonEqual(this.resolve(tokens), member("value"))) throw new Fail("test failed: the value differs");
        return;
      case "copy":
        return this.add(tokens, jsonCopy(this.resolve(splitPointer(member("from")))));
      case "move": {
        const from = splitPointer(member("from"));
        if (from.length === tokens.length && from.every((t, i) => t === tokens[i])) {
          this.resolve(from);
          return;
        }
        if (tokens.length > from.length && from.every((t, i) => t === tokens[i])) {
          throw new Fail("cannot move a value into one of its own children");
        }
        return this.add(tokens, this.remove(from));
      }
      default:
        throw new Fail(`unknown operation ${JSON.stringify(name)}`);
    }
  }
}

/**
 * Apply JSON Patch (RFC 6902) operations plus turnkit's `append` ({op: "append", path, value: string}:
 * append to the string at path) and return the new document. `doc` is never modified; untouched parts
 * are shared with it. A bad operation throws JsonPatchError (`opIndex`, `path`) and nothing is applied.
 */
export function applyOps(doc, ops) {
  if (!Array.isArray(ops)) throw new JsonPatchError(`a patch must be an array of operations, not ${typeof ops}`);
  const batch = new Batch(doc);
  ops.forEach((op, index) => {
    try {
      batch.apply(op);
    } catch (error) {
      if (!(error instanceof Fail)) throw error;
      throw new JsonPatchError(error.message, index, isObject(op) ? op.path : undefined);
    }
  });
  return batch.doc;
}

const OP_NAMES = { a: "add", r: "replace", x: "remove", "+": "append", m: "move", c: "copy", t: "test" };
const SHORT_KEYS = { o: "op", p: "path", v: "value", f: "from" };

function absolutePath(previous, relative, index) {
  const m = /^([0-9]+)((?:\/[\s\S]*)?)$/.exec(relative);
  if (!m) throw new JsonPatchError(`'p' ${JSON.stringify(relative)} is neither a pointer nor relative`, index);
  const drop = Number(m[1]);
  const tokens = previous ? previous.split("/") : [""];
  if (drop >= tokens.length) throw new JsonPatchError(`'p' ${JSON.stringify(relative)} goes above the root`, index);
  return tokens.slice(0, tokens.length - drop).join("/") + m[2];
}

/**
 * Decodes the compact wire form (turnkit.structured.OpEncoder; `?encoding=compact`) batch by batch,
 * carrying the op and path from one batch to the next: one decoder per connection, reset at a snapshot.
 */
export class OpDecoder {
  constructor() {
    this.reset();
  }

  reset() {
    this.op = "add";
    this.path = "";
  }

  decode(textOrItems) {
    const items = typeof textOrItems === "string" ? JSON.parse(textOrItems) : textOrItems;
    if (!Array.isArray(items)) throw new JsonPatchError("encoded operations must be a JSON array");
    const ops = [];
    items.forEach((item, index) => {
      if (typeof item === "string") {
        ops.push({ op: "append", path: this.path, value: item });
        return;
      }
      if (Array.isArray(item)) {
        if (item.length < 1 || item.length > 2 || typeof item[0] !== "string") {
          throw new JsonPatchError("an array is [path] or [path, value]", index);
        }
        let path = item[0];
        if (path && path[0] !== "/") path = absolutePath(this.path, path, index);
        this.path = path;
        const op = { op: this.op, path };
        if (item.length === 2) op.value = item[1];
        ops.push(op);
        return;
      }
      if (!isObject(item)) throw new JsonPatchError("an encoded operation is an object, an array or a string", index);
      const op = {};
      for (const key of Object.keys(item)) {
        if (!hasOwn(SHORT_KEYS, key)) throw new JsonPatchError(`unknown member ${JSON.stringify(key)}`, index);
        op[SHORT_KEYS[key]] = item[key];
      }
      let name = hasOwn(op, "op") ? op.op : this.op;
      let path = hasOwn(op, "path") ? op.path : this.path;
      if (typeof name !== "string" || typeof path !== "string") throw new JsonPatchError("'o' and 'p' must be strings", index);
      name = hasOwn(OP_NAMES, name) ? OP_NAMES[name] : name;
      if (path && path[0] !== "/") path = absolutePath(this.path, path, index);
      this.op = name;
      this.path = path;
      const out = { op: name, path };
      if (hasOwn(op, "value")) out.value = op.value;
      if (hasOwn(op, "from")) out.from = op.from;
      ops.push(out);
    });
    return ops;
  }
}

/**
 * The JSON Pointers still being written, read from the `$partial` markers (runs published with markers):
 * every open object, and each member its marker names. Root first.
 */
export function partialPaths(value, marker = "$partial") {
  const out = [];
  let node = value;
  let path = "";
  for (;;) {
    while (Array.isArray(node) && node.length) {
      path += `/${node.length - 1}`;
      node = node[node.length - 1];
    }
    if (!isObject(node) || !hasOwn(node, marker) || !isObject(node[marker])) return out;
    out.push(path);
    const open = Object.keys(node[marker]).filter((key) => node[marker][key] === true);
    if (!open.length) return out;
    path += `/${escapeToken(open[0])}`;
    out.push(path);
    node = node[open[0]];
    if (Array.isArray(node) && !node.length) return out;
  }
}

/** The value without its `$partial` markers (a copy of the objects that had one). */
export function withoutMarkers(value, marker = "$partial") {
  if (Array.isArray(value)) {
    const items = value.map((item) => withoutMarkers(item, marker));
    return items.every((item, i) => item === value[i]) ? value : items;
  }
  if (!isObject(value)) return value;
  let copy = null;
  for (const key of Object.keys(value)) {
    const item = key === marker ? undefined : withoutMarkers(value[key], marker);
    if (item !== value[key]) {
      copy = copy || Object.assign({}, value);
      if (key === marker) delete copy[key];
      else setMember(copy, key, item);
    }
  }
  return copy || value;
}

/**
 * Follow a sync stream with EventSource. Handlers (all optional):
 *   onValue(value, subscription)  after every snapshot and patch
 *   onSnapshot(value, subscription)  after a snapshot (before onValue)
 *   onOps(ops, subscription)      each patch's operations (before onValue)
 *   onEnd({value} | {error}, subscription)  once; the connection is then closed
 *   onError(error, subscription)  connection errors (EventSource retries by itself while readyState is
 *                                 CONNECTING) and operations that do not apply (it then reconnects
 *                                 without an id, so the server sends a fresh snapshot)
 * Options: lastEventId (resume from a seq: sent as ?lastEventId=) with value (the value held at that seq:
 *          the server replays only the patches after it), marker ("$partial"),
 *          encoding: "compact" (asks for ?encoding=compact, the OpEncoder wire form, and decodes it),
 *          EventSource (a constructor, for Node or tests), withCredentials.
 * Returns the subscription: {value, seq, done, partial, snapshots, patches (counts received), close()}.
 */
export function subscribe(url, handlers = {}, options = {}) {
  const { onValue, onOps, onEnd, onError, onSnapshot } = handlers;
  const Source = options.EventSource || globalThis.EventSource;
  if (typeof Source !== "function") throw new Error("subscribe() needs EventSource (pass options.EventSource)");
  const marker = options.marker || "$partial";
  const resuming = options.lastEventId !== null && options.lastEventId !== undefined && options.lastEventId !== "";
  const sub = {
    // resuming from lastEventId: the value the client held at that seq (the server replays the patches after it)
    value: resuming ? options.value : undefined,
    seq: resuming ? Number(String(options.lastEventId).split(":").pop()) : null,
    snapshots: 0,
    patches: 0,
    done: false,
    get partial() {
      return partialPaths(sub.value, marker);
    },
    close() {
      sub.done = true;
      if (source) source.close();
    },
  };
  let source = null;
  const compact = options.encoding === "compact";
  const decoder = compact ? new OpDecoder() : null;
  const base = compact ? `${url}${url.includes("?") ? "&" : "?"}encoding=compact` : url;
  const withId = (id) => {
    if (id === null || id === undefined || id === "") return base;
    return `${base}${base.includes("?") ? "&" : "?"}lastEventId=${encodeURIComponent(id)}`;
  };
  const seqOf = (event) => (event.lastEventId === "" ? sub.seq : Number(event.lastEventId.split(":").pop()));
  const open = (id) => {
    source = new Source(withId(id), options.withCredentials ? { withCredentials: true } : undefined);
    // every connection (EventSource's own reconnects included) starts the compact form afresh
    source.addEventListener("open", () => decoder && decoder.reset());
    source.addEventListener("snapshot", (event) => {
      if (decoder) decoder.reset();
      sub.value = JSON.parse(event.data);
      sub.seq = seqOf(event);
      sub.snapshots += 1;
      if (onSnapshot) onSnapshot(sub.value, sub);
      if (onValue) onValue(sub.value, sub);
    });
    source.addEventListener("patch", (event) => {
      let ops;
      try {
        ops = decoder ? decoder.decode(event.data) : JSON.parse(event.data);
        sub.value = applyOps(sub.value, ops);
      } catch (error) {
        if (onError) onError(error, sub);
        source.close();
        open(null); // out of sync: start again from a snapshot
        return;
      }
      sub.seq = seqOf(event);
      sub.patches += 1;
      if (onOps) onOps(ops, sub);
      if (onValue) onValue(sub.value, sub);
    });
    source.addEventListener("end", (event) => {
      sub.seq = seqOf(event);
      sub.done = true;
      source.close();
      if (onEnd) onEnd(JSON.parse(event.data), sub);
    });
    source.onerror = (event) => {
      if (!sub.done && onError) onError(event, sub);
    };
  };
  open(options.lastEventId);
  return sub;
}
