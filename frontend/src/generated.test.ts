import { describe, expect, it } from "vitest";
// @ts-expect-error: a plain ES module script without types
import { generate } from "../generate-types.mjs";
import schema from "./generated/protocol.schema.json?raw";
import checkedIn from "./generated/protocol.ts?raw";

describe("the generated reply types", () => {
  it("are what json-schema-to-typescript makes of lomi-protocol's current schemas", async () => {
    // Stale: run `npm run build` (and first LOMI_UPDATE_GENERATED=1 cargo test -p lomi-protocol).
    expect(checkedIn).toBe(await generate(schema));
  });
});
