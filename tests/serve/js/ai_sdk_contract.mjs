// POSTs a useChat body to /api/chat and reads the answer the way the AI SDK does: parseJsonEventStream with
// uiMessageChunkSchema (schema validation of every part), then readUIMessageStream (the client's reducer).
// Prints {headers, chunks, message} as JSON; any schema or protocol failure exits non-zero.
import { load } from "./_load.mjs";

const { parseJsonEventStream, readUIMessageStream, uiMessageChunkSchema } = await load("ai");
const [url, body] = process.argv.slice(2);
const response = await fetch(url, {
  method: "POST",
  headers: { "content-type": "application/json" },
  body,
});
if (!response.ok) throw new Error(`HTTP ${response.status}: ${await response.text()}`);
const headers = Object.fromEntries(response.headers.entries());
const chunks = [];
for await (const result of parseJsonEventStream({ stream: response.body, schema: uiMessageChunkSchema })) {
  if (!result.success) throw result.error;
  chunks.push(result.value);
}
const stream = new ReadableStream({
  start(controller) {
    for (const chunk of chunks) controller.enqueue(chunk);
    controller.close();
  },
});
let message = null;
for await (const m of readUIMessageStream({ stream, terminateOnError: true })) message = m;
process.stdout.write(JSON.stringify({ headers, chunks, message }));
