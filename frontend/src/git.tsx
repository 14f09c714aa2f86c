// A project's Git view: the status split into staged changes and changes not staged yet,
// each file's diff, staging and unstaging, and the person's commit. Through the same control
// requests `lomi git …` sends, which run the same Git code the agents' tools run.

import { useEffect, useState } from "preact/hooks";
import type { Control, GitEntry, GitStatus } from "./project-api";

export interface GitViewProps {
  workspaceId: string;
  projectId: string;
  control: Control;
  /** Changes when files changed (the tree's watch): the status is read again. */
  changes?: number;
}

const LETTER: Record<string, string> = {
  modified: "M",
  added: "A",
  deleted: "D",
  renamed: "R",
  copied: "C",
  type_changed: "T",
  unmerged: "U",
  untracked: "?",
};

/** The entries staged, and those with changes not staged (untracked files among them). */
export function split(entries: GitEntry[]): { staged: GitEntry[]; unstaged: GitEntry[] } {
  return {
    staged: entries.filter((e) => e.index !== "unmodified" && e.index !== "untracked"),
    unstaged: entries.filter((e) => e.worktree !== "unmodified"),
  };
}

export function GitView({ workspaceId, projectId, control, changes = 0 }: GitViewProps) {
  const [status, setStatus] = useState<GitStatus | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [shown, setShown] = useState<{ path: string; staged: boolean } | null>(null);
  const [diff, setDiff] = useState<string>("");
  const [message, setMessage] = useState("");
  const [note, setNote] = useState<string | null>(null);

  const refresh = async () => {
    try {
      setStatus(await control<GitStatus>({ gitStatus: { workspaceId, projectId } }));
      setError(null);
    } catch (e) {
      setError((e as Error).message);
    }
  };

  const showDiff = async (path: string, staged: boolean) => {
    setShown({ path, staged });
    try {
      const view = await control<{ diff: string; truncated: boolean }>({ gitDiff: { workspaceId, projectId, path, staged } });
      setDiff(view.diff + (view.truncated ? "\n… (cut short)" : ""));
    } catch (e) {
      setDiff(`(no diff: ${(e as Error).message})`);
    }
  };

  useEffect(() => {
    void refresh();
    if (shown) void showDiff(shown.path, shown.staged);
  }, [workspaceId, projectId, changes]);

  const act = async (request: Record<string, unknown>, done: string) => {
    try {
      await control(request);
      setNote(done);
    } catch (e) {
      setNote(`Refused: ${(e as Error).message}`);
    }
    await refresh();
    if (shown) await showDiff(shown.path, shown.staged);
  };

  const commit = async () => {
    await act(
      { gitCommit: { workspaceId, projectId, message, expectedHeadRevision: status?.head ?? "" } },
      "Committed.",
    );
    setMessage("");
    setShown(null);
    setDiff("");
  };

  if (error) return <div class="git-view"><h3>Git</h3><p class="hint">{error}</p></div>;
  if (!status) return <div class="git-view"><h3>Git</h3><p class="hint">Reading the status…</p></div>;
  const { staged, unstaged } = split(status.entries);
  const row = (entry: GitEntry, isStaged: boolean) => {
    const code = isStaged ? entry.index : entry.worktree;
    const current = shown?.path === entry.path && shown.staged === isStaged;
    return (
      <li key={`${isStaged}:${entry.path}`} class={`git-row${current ? " selected" : ""}`} data-path={entry.path} data-staged={String(isStaged)}>
        <span class={`git-code ${code}`} title={code}>
          {LETTER[code] ?? "·"}
        </span>
        <button class="git-path" onClick={() => void showDiff(entry.path, isStaged)}>
          {entry.path}
        </button>
        {isStaged ? (
          <button class="unstage small" onClick={() => void act({ gitUnstage: { workspaceId, projectId, paths: [entry.path] } }, `Unstaged ${entry.path}.`)}>
            Unstage
          </button>
        ) : (
          <button class="stage small" onClick={() => void act({ gitStage: { workspaceId, projectId, paths: [entry.path] } }, `Staged ${entry.path}.`)}>
            Stage
          </button>
        )}
      </li>
    );
  };
  return (
    <div class="git-view">
      <h3>
        Git <span class="hint">{status.branch ?? "detached"} · {status.head ? status.head.slice(0, 8) : "no commit yet"}</span>
      </h3>
      <h4>Staged</h4>
      {staged.length ? <ul class="git-list staged">{staged.map((e) => row(e, true))}</ul> : <p class="empty">Nothing staged.</p>}
      <h4>Changes</h4>
      {unstaged.length ? <ul class="git-list unstaged">{unstaged.map((e) => row(e, false))}</ul> : <p class="empty">No changes.</p>}
      <div class="commit-box">
        <textarea class="commit-message" placeholder="Commit message" value={message} onInput={(e) => setMessage((e.target as HTMLTextAreaElement).value)} />
        <button class="commit primary small" disabled={staged.length === 0 || message.trim() === ""} onClick={() => void commit()}>
          Commit
        </button>
      </div>
      {note ? <p class="git-note">{note}</p> : null}
      {shown ? (
        <div class="diff-view">
          <div class="diff-title">
            {shown.path} · {shown.staged ? "staged" : "not staged"}
          </div>
          <pre class="diff">
            {diff.split("\n").map((line, i) => (
              <div key={i} class={line.startsWith("+") && !line.startsWith("+++") ? "add" : line.startsWith("-") && !line.startsWith("---") ? "del" : line.startsWith("@@") ? "hunk" : ""}>
                {line || " "}
              </div>
            ))}
          </pre>
        </div>
      ) : null}
    </div>
  );
}
