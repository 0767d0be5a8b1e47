// turnkit lint: renders chat templates with @huggingface/jinja (the engine of transformers.js).
// Protocol: each stdin line is a JSON list of cases {"source": str, "context": object}; the answer is one
// stdout line, a JSON list of {"ok": str} or {"error": str} in the same order. argv[2], when given, is the
// path of the @huggingface/jinja package folder (else it is found by Node's own resolution).
"use strict";
const readline = require("readline");

let jinja;
try {
  jinja = require(process.argv[2] || "@huggingface/jinja");
} catch (err) {
  process.stderr.write("cannot load @huggingface/jinja: " + err.message + "\n");
  process.exit(3);
}

const compiled = new Map();

function render(source, context) {
  let template = compiled.get(source);
  if (template === undefined) {
    try {
      template = new jinja.Template(source);
    } catch (err) {
      template = err;
    }
    if (compiled.size > 256) compiled.clear();
    compiled.set(source, template);
  }
  if (template instanceof Error) throw template;
  return template.render(context);
}

const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
lines.on("line", (line) => {
  const answers = JSON.parse(line).map((item) => {
    try {
      return { ok: String(render(item.source, item.context)) };
    } catch (err) {
      return { error: String((err && err.message) || err) };
    }
  });
  process.stdout.write(JSON.stringify(answers) + "\n");
});
