import { describe, expect, it } from "vitest";
import { type LayoutNode, groups, joinTabs, leaves, split, without } from "./layout";

const two: LayoutNode = { tabs: { panels: ["pn_a", "pn_b"] } };

describe("layout edits", () => {
  it("splits a panel out of its tab group beside it, keeping the order of panels", () => {
    const next = split(two, "pn_b", "row");
    expect(next).toEqual({
      split: { direction: "row", children: [{ tabs: { panels: ["pn_a"] } }, { tabs: { panels: ["pn_b"] } }] },
    });
    expect(leaves(next)).toEqual(["pn_a", "pn_b"]);
  });

  it("refuses to split a panel that is alone in its group", () => {
    const once = split(two, "pn_b", "row")!;
    expect(split(once, "pn_b", "column")).toBeNull();
  });

  it("keeps splits of one direction flat and nests the other direction", () => {
    const three: LayoutNode = {
      split: { direction: "row", children: [{ tabs: { panels: ["pn_a", "pn_c"] } }, { tabs: { panels: ["pn_b"] } }] },
    };
    const flat = split(three, "pn_c", "row")!;
    expect("split" in flat && flat.split.children).toHaveLength(3);
    const nested = split(three, "pn_c", "column")!;
    expect(nested).toEqual({
      split: {
        direction: "row",
        children: [
          { split: { direction: "column", children: [{ tabs: { panels: ["pn_a"] } }, { tabs: { panels: ["pn_c"] } }] } },
          { tabs: { panels: ["pn_b"] } },
        ],
      },
    });
  });

  it("moves a panel into another group and removes the group it leaves empty", () => {
    const apart = split(two, "pn_b", "row")!;
    expect(joinTabs(apart, "pn_b", "pn_a")).toEqual({ tabs: { panels: ["pn_a", "pn_b"] } });
    expect(joinTabs(apart, "pn_a", "pn_a")).toBeNull();
    expect(groups(apart)).toEqual([["pn_a"], ["pn_b"]]);
  });

  it("takes a panel out without leaving empty nodes", () => {
    const apart = split(two, "pn_b", "row")!;
    expect(without(apart, "pn_a")).toEqual({ tabs: { panels: ["pn_b"] } });
    expect(without({ tabs: { panels: ["pn_a"] } }, "pn_a")).toBeNull();
  });
});
