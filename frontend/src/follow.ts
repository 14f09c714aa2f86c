// Reading something again when the broker's change feed says it may have changed: one read at
// a time, and one more after it when the feed moved meanwhile (never a timer).

/** A function to call whenever the feed moved: it runs `read` now, or once more after the
 * read under way. */
export function follower(read: () => Promise<void>): () => void {
  let reading = false;
  let again = false;
  const follow = (): void => {
    if (reading) {
      again = true;
      return;
    }
    reading = true;
    void read()
      .catch(() => undefined)
      .finally(() => {
        reading = false;
        if (again) {
          again = false;
          follow();
        }
      });
  };
  return follow;
}
