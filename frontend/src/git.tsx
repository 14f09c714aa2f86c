// A project's Git view: the status split into staged changes and changes not staged yet,
// each file's diff, staging and unstaging, and the person's commit. Through the same control
// requests `lomi git …` sends, which run the same Git code the agents' tools run.

import { useEffect, useState } from "preact/hooks";
import type { GitCommitted, GitDiffView } from "./generated/protocol";
import type { Control, GitEntry, GitStatus } from "./project-api";

export interface GitViewProps {
  workspaceId: string;
  projectId: string;
  control: Control;
  /** Changes when files changed (the tree's watch): the status is read again. */
  changes?: number;
  /** Where a chosen file's diff is shown; without it, below the lists. */
  onSelect?(selection: DiffSelection | null): void;
  /** The person staged, unstaged or committed. */
  onChanged?(): void;
}

export interface DiffSelection {
  path: string;
  staged: boolean;
}

/** The classes of a unified diff's lines, and the lines (no empty last line). */
export function diffLines(diff: string): { line: string; kind: string }[] {
  const lines = diff.split("\n");
  if (lines.length > 0 && lines[lines.length - 1] === "") lines.pop();
  return lines.map((line) => ({
    line,
    kind:
      line.startsWith("+") && !line.startsWith("+++")
        ? "add"
        : line.startsWith("-") && !line.startsWith("---")
          ? "del"
          : line.startsWith("@@")
            ? "hunk"
            : "",
  }));
}

export interface DiffViewProps extends DiffSelection {
  workspaceId: string;
  projectId: string;
  control: Control;
  /** Changes when files changed: the diff is read again. */
  changes?: number;
}

/** One file's diff, staged or not. */
export function DiffView({ workspaceId, projectId, control, path, staged, changes = 0 }: DiffViewProps) {
  const [diff, setDiff] = useState<string | null>(null);
  useEffect(() => {
    control<GitDiffView>({ gitDiff: { workspaceId, projectId, path, staged } })
      .then((view) => setDiff(view.diff + (view.truncated ? "\n… (cut short)" : "")))
      .catch((e: Error) => setDiff(`(no diff: ${e.message})`));
  }, [workspaceId, projectId, path, staged, changes]);
  return (
    <div class="diff-view" data-path={path} data-staged={String(staged)}>
      <div class="diff-title">
        {path} · {staged ? "staged" : "not staged"}
      </div>
      {diff === null ? (
        <p class="hint">Reading the diff…</p>
      ) : diff === "" ? (
        <p class="empty">No difference {staged ? "staged" : "left to stage"}.</p>
      ) : (
        <pre class="diff">
          {diffLines(diff).map(({ line, kind }, i) => (
            <div key={i} class={kind}>
              {line || " "}
            </div>
          ))}
        </pre>
      )}
    </div>
  );
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

export function GitView({ workspaceId, projectId, control, changes = 0, onSelect, onChanged }: GitViewProps) {
  const [status, setStatus] = useState<GitStatus | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [shown, setShown] = useState<DiffSelection | null>(null);
  const [acted, setActed] = useState(0);
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

  const select = (selection: DiffSelection | null) => {
    setShown(selection);
    onSelect?.(selection);
  };

  useEffect(() => {
    void refresh();
  }, [workspaceId, projectId, changes]);

  const act = async (request: Record<string, unknown>, done: (reply: unknown) => string, then?: DiffSelection | null) => {
    try {
      setNote(done(await control(request)));
      if (then !== undefined) select(then);
    } catch (e) {
      setNote(`Refused: ${(e as Error).message}`);
    }
    setActed((n) => n + 1);
    onChanged?.();
    await refresh();
  };

  const commit = async () => {
    await act(
      { gitCommit: { workspaceId, projectId, message, expectedHeadRevision: status?.head ?? "" } },
      (reply) => `Committed ${(reply as GitCommitted).commit.slice(0, 8)}: ${message.trim()}`,
      null,
    );
    setMessage("");
  };

  if (error) {
    const plain = /not a Git repository/.test(error) ? "This project is not a Git repository." : error;
    return (
      <div class="git-view">
        <h3>Git</h3>
        <p class="hint">{plain}</p>
      </div>
    );
  }
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
        <button class="git-path" onClick={() => select({ path: entry.path, staged: isStaged })}>
          {entry.path}
        </button>
        {isStaged ? (
          <button
            class="unstage small"
            onClick={() =>
              void act({ gitUnstage: { workspaceId, projectId, paths: [entry.path] } }, () => `Unstaged ${entry.path}.`, current ? { path: entry.path, staged: false } : undefined)
            }
          >
            Unstage
          </button>
        ) : (
          <button
            class="stage small"
            onClick={() =>
              void act({ gitStage: { workspaceId, projectId, paths: [entry.path] } }, () => `Staged ${entry.path}.`, current ? { path: entry.path, staged: true } : undefined)
            }
          >
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
      {shown && !onSelect ? <DiffView workspaceId={workspaceId} projectId={projectId} control={control} path={shown.path} staged={shown.staged} changes={changes + acted} /> : null}
    </div>
  );
}
