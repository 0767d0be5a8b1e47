// Node tests of src/turnkit/serve/static/turnkit.js, run by tests/serve/test_js_client.py (`node --test`).
// Inputs come from the environment: TURNKIT_JS (the module), TURNKIT_CORPORA (json-patch-tests),
// TURNKIT_APPEND_CASES (tests/structured/append_cases.json), TURNKIT_SYNC_FIXTURE (streams made by Python).
import assert from "node:assert/strict";
import { readFileSync, existsSync } from "node:fs";
import { test } from "node:test";
import { pathToFileURL } from "node:url";

const tk = await import(pathToFileURL(process.env.TURNKIT_JS).href);
const { applyOps, JsonPatchError, OpDecoder, subscribe, partialPaths, withoutMarkers } = tk;
const readJson = (path) => JSON.parse(readFileSync(path, "utf8"));
const canon = (value) => JSON.stringify(value, (key, v) =>
  v && typeof v === "object" && !Array.isArray(v) ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, v[k]])) : v);

function runCase(c, where) {
  const before = JSON.stringify(c.doc);
  if ("error" in c) {
    assert.throws(() => applyOps(c.doc, c.patch), (error) => {
      assert.ok(error instanceof JsonPatchError, `${where}: ${error}`);
      assert.ok(error.opIndex >= 0 && error.opIndex < c.patch.length, `${where}: opIndex ${error.opIndex}`);
      if ("op_index" in c) assert.equal(error.opIndex, c.op_index, where);
      return true;
    }, where);
  } else {
    const result = applyOps(c.doc, c.patch);
    if ("expected" in c) assert.equal(canon(result), canon(c.expected), where);
  }
  assert.equal(JSON.stringify(c.doc), before, `${where}: the input was modified`);
}

for (const suite of ["tests.json", "spec_tests.json"]) {
  test(`json-patch-tests ${suite}`, () => {
    const path = `${process.env.TURNKIT_CORPORA}/json-patch-tests/${suite}`;
    assert.ok(existsSync(path), `missing corpus ${path}`);
    let run = 0;
    readJson(path).forEach((c, i) => {
      if (c.disabled || !("patch" in c)) return;
      runCase(c, `${suite}:${i} ${c.comment || ""}`);
      run += 1;
    });
    assert.ok(run >= 15);
    console.log(`# ${suite}: ${run} cases`);
  });
}

test("turnkit append cases", () => {
  const cases = readJson(process.env.TURNKIT_APPEND_CASES);
  cases.forEach((c) => runCase(c, c.comment));
  assert.ok(cases.length >= 10);
});

test("copy-on-write: untouched subtrees shared, changed paths new", () => {
  const doc = { a: { t: "x" }, b: { u: [1] } };
  const next = applyOps(doc, [{ op: "append", path: "/a/t", value: "y" }]);
  assert.equal(next.a.t, "xy");
  assert.equal(doc.a.t, "x");
  assert.notEqual(next, doc);
  assert.notEqual(next.a, doc.a);
  assert.equal(next.b, doc.b);
  const proto = applyOps({}, [{ op: "add", path: "/__proto__", value: { polluted: true } }]);
  assert.equal({}.polluted, undefined);
  assert.deepEqual(Object.keys(proto), ["__proto__"]);
});

test("streams made by Python: applyOps rebuilds annotated() and partialPaths matches", () => {
  const fixture = readJson(process.env.TURNKIT_SYNC_FIXTURE);
  let steps = 0;
  for (const stream of fixture) {
    let doc = null;
    const decoder = new OpDecoder();
    for (const step of stream.steps) {
      assert.deepEqual(decoder.decode(step.compact), step.ops, stream.name);
      doc = applyOps(doc, step.ops);
      assert.equal(canon(doc), canon(step.annotated), stream.name);
      assert.deepEqual(partialPaths(doc), step.partial, stream.name);
      assert.equal(canon(withoutMarkers(doc)), canon(step.value), stream.name);
      steps += 1;
    }
  }
  assert.ok(steps > 100);
});

class FakeEventSource {
  static instances = [];
  constructor(url) {
    this.url = url;
    this.listeners = {};
    this.closed = false;
    FakeEventSource.instances.push(this);
  }
  addEventListener(name, fn) {
    (this.listeners[name] ||= []).push(fn);
  }
  close() {
    this.closed = true;
  }
  emit(name, data, id) {
    for (const fn of this.listeners[name] || []) fn({ data: JSON.stringify(data), lastEventId: String(id) });
  }
}

test("subscribe: snapshot, patches, end; resume id in the URL; a bad patch reconnects for a snapshot", () => {
  FakeEventSource.instances = [];
  const values = [];
  const errors = [];
  let ended = null;
  const sub = subscribe("/v1/streams/r1/events", {
    onValue: (value) => values.push(value),
    onEnd: (end) => (ended = end),
    onError: (error) => errors.push(error),
  }, { EventSource: FakeEventSource, lastEventId: 7 });
  const first = FakeEventSource.instances[0];
  assert.equal(first.url, "/v1/streams/r1/events?lastEventId=7");
  first.emit("snapshot", { t: "He", $partial: { t: true } }, 7);
  first.emit("patch", [{ op: "append", path: "/t", value: "llo" }], 8);
  assert.equal(sub.seq, 8);
  assert.deepEqual(sub.partial, ["", "/t"]);
  first.emit("patch", [{ op: "append", path: "/missing", value: "x" }], 9);
  assert.equal(errors.length, 1);
  assert.ok(first.closed);
  const second = FakeEventSource.instances[1];
  assert.equal(second.url, "/v1/streams/r1/events");
  second.emit("snapshot", { t: "Hello!" }, 9);
  second.emit("end", { value: { t: "Hello!" } }, 10);
  assert.deepEqual(ended, { value: { t: "Hello!" } });
  assert.ok(second.closed && sub.done);
  assert.deepEqual(values.map((v) => v.t), ["He", "Hello", "Hello!"]);
  assert.deepEqual(sub.partial, []);
});

test("subscribe with encoding compact: decoder reset per connection and at snapshots", () => {
  FakeEventSource.instances = [];
  const sub = subscribe("/s?x=1", {}, { EventSource: FakeEventSource, encoding: "compact", lastEventId: "r:3" });
  const es = FakeEventSource.instances[0];
  assert.equal(es.url, "/s?x=1&encoding=compact&lastEventId=r%3A3");
  es.emit("open", null, "");
  es.emit("snapshot", null, 3);
  es.emit("patch", [{ v: {} }, ["/t", "a"]], 4);
  es.emit("patch", ["b", ["/u", 1]], 5);
  assert.deepEqual(sub.value, { t: "ab", u: 1 });
  es.emit("open", null, "");  // a reconnect: the server starts a new encoder
  es.emit("patch", [{ o: "+", p: "/t", v: "c" }], 6);
  assert.deepEqual(sub.value, { t: "abc", u: 1 });
  assert.equal(sub.seq, 6);
});
