// Runs @ag-ui/client's HttpAgent against /agui: its own pipeline parses the SSE stream, verifies the event
// order (verifyEvents) and applies the events to the agent's messages. Prints {events, messages} as JSON.
import { load } from "./_load.mjs";

const { HttpAgent } = await load("@ag-ui/client");
const [url, input] = process.argv.slice(2);
const { messages, tools, context } = JSON.parse(input);
const agent = new HttpAgent({ url, threadId: "thread-1", initialMessages: messages });
const events = [];
let failure = null;
await agent.runAgent(
  { runId: "run-1", tools: tools ?? [], context: context ?? [] },
  {
    onEvent({ event }) {
      events.push(event);
    },
    onRunFailed({ error }) {
      failure = String(error?.stack ?? error);
    },
  },
);
if (failure) throw new Error(failure);
process.stdout.write(JSON.stringify({ events, messages: agent.messages }));
