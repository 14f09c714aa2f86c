import { describe, expect, it } from "vitest";
import { follower } from "./follow";

describe("following the change feed", () => {
  it("reads one at a time and once more when the feed moved meanwhile", async () => {
    let reads = 0;
    const finish: (() => void)[] = [];
    const follow = follower(
      () =>
        new Promise<void>((resolve) => {
          reads += 1;
          finish.push(resolve);
        }),
    );
    follow();
    follow();
    follow();
    expect(reads).toBe(1);
    finish.shift()!();
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(reads).toBe(2);
    finish.shift()!();
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(reads).toBe(2);
  });
});
