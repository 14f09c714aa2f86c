// Generates the window's TypeScript reply types (src/generated/protocol.ts) from the JSON
// Schemas lomi-protocol derives from its Rust types (src/generated/protocol.schema.json,
// kept current by lomi-protocol's tests). `npm run build` runs it; `--check` only says
// whether the checked-in file is current (Vitest's generated.test.ts does the same).
import { readFileSync, writeFileSync } from "node:fs";
import { compile } from "json-schema-to-typescript";

const here = new URL("./src/generated/", import.meta.url);

/** The TypeScript of the schema document `schema` (its JSON text). */
export async function generate(schema) {
  return compile(JSON.parse(schema), "LomiWindowTypes", {
    bannerComment:
      "// Generated from lomi-protocol's Rust types by generate-types.mjs (json-schema-to-typescript):\n// do not edit. The schema is src/generated/protocol.schema.json.",
    additionalProperties: false,
    unreachableDefinitions: true,
    format: true,
    ignoreMinAndMaxItems: true,
    style: { printWidth: 120 },
  });
}

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].split("/").pop())) {
  const text = await generate(readFileSync(new URL("protocol.schema.json", here), "utf8"));
  const target = new URL("protocol.ts", here);
  if (process.argv.includes("--check")) {
    if (readFileSync(target, "utf8") !== text) {
      console.error("src/generated/protocol.ts is stale: run npm run build");
      process.exit(1);
    }
  } else {
    writeFileSync(target, text);
  }
}
