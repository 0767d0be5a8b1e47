// Loads an npm package from the folder given in TURNKIT_NODE_MODULES' parent (scripts/test.sh installs there).
import { createRequire } from "node:module";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

export async function load(name) {
  const root = process.env.TURNKIT_NODE_PREFIX;
  if (!root) throw new Error("TURNKIT_NODE_PREFIX is not set");
  const require = createRequire(join(root, "package.json"));
  const mod = await import(pathToFileURL(require.resolve(name)).href);
  return mod.default && !(Object.keys(mod).length > 1) ? mod.default : mod;
}
