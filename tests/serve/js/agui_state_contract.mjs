// Runs @ag-ui/client's HttpAgent against /agui with forwardedProps.response_format: the structured run arrives
// as STATE_SNAPSHOT + STATE_DELTA, which the client applies with fast-json-patch, validation on. A delta that
// does not apply is only console.warn-ed by the client, so warnings are recorded and reported, and every delta
// is also applied here with fast-json-patch's validate=true (it throws on any op outside RFC 6902).
// Prints {events, state, states, warnings} as JSON.
import { load } from "./_load.mjs";

const { HttpAgent } = await load("@ag-ui/client");
const fjp = await load("fast-json-patch");
const jsonpatch = fjp.applyPatch ? fjp : fjp.default;
const [url, input] = process.argv.slice(2);
const { messages, forwardedProps } = JSON.parse(input);
const warnings = [];
console.warn = (...args) => warnings.push(args.map(String).join(" "));
console.error = (...args) => warnings.push(args.map(String).join(" "));
const agent = new HttpAgent({ url, threadId: "thread-1", initialMessages: messages });
const events = [];
const states = [];
let mirror = null;
let failure = null;
await agent.runAgent(
  { runId: "run-1", tools: [], context: [], forwardedProps },
  {
    onEvent({ event }) {
      events.push(event);
      if (event.type === "STATE_SNAPSHOT") mirror = structuredClone(event.snapshot);
      if (event.type === "STATE_DELTA") {
        mirror = jsonpatch.applyPatch(mirror, structuredClone(event.delta), true, false).newDocument;
      }
    },
    onStateChanged({ state }) {
      states.push(structuredClone(state));
    },
    onRunFailed({ error }) {
      failure = String(error?.stack ?? error);
    },
  },
);
if (failure && !events.some((e) => e.type === "RUN_ERROR")) throw new Error(failure);
process.stdout.write(JSON.stringify({ events, state: agent.state, mirror, states, warnings }));
