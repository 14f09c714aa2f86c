// A project's file tree: one directory listed at a time as the person expands it, kept live
// by the project's watch (a file an agent or a terminal writes appears at once). Clicking a
// file opens it.

import { useEffect, useState } from "preact/hooks";
import { filesFollow, filesUnwatch, filesWatch, watchId, type Control, type DirEntry, type DirListing } from "./project-api";

export interface FileTreeProps {
  workspaceId: string;
  projectId: string;
  control: Control;
  /** The file shown in the editor, if any. */
  selected?: string | null;
  onOpen(path: string): void;
  /** Called with the directories that changed (the Git view reads its status again). */
  onChanged?(dirs: string[]): void;
}

export function join(dir: string, name: string): string {
  return dir === "" ? name : `${dir}/${name}`;
}

export function FileTree({ workspaceId, projectId, control, selected, onOpen, onChanged }: FileTreeProps) {
  const [listings, setListings] = useState<Record<string, DirEntry[]>>({});
  const [expanded, setExpanded] = useState<Set<string>>(new Set([""]));
  const [error, setError] = useState<string | null>(null);

  const load = async (dir: string) => {
    try {
      const listing = await control<DirListing>({ fileList: { workspaceId, projectId, path: dir } });
      setListings((old) => ({ ...old, [dir]: listing.entries }));
    } catch (e) {
      // A directory that went away is dropped with its subtree.
      setListings((old) => {
        const next = { ...old };
        for (const key of Object.keys(next)) if (key === dir || key.startsWith(`${dir}/`)) delete next[key];
        return next;
      });
      if (dir === "") setError((e as Error).message);
    }
  };

  useEffect(() => {
    setListings({});
    setExpanded(new Set([""]));
    let gone = false;
    const id = watchId();
    void filesWatch(workspaceId, projectId, id, (dirs) => {
      if (gone) return;
      for (const dir of dirs) void load(dir);
      onChanged?.(dirs);
    })
      .then(() => filesFollow(projectId, ""))
      .catch((e: Error) => setError(`The tree is not live: ${e.message}`));
    void load("");
    return () => {
      gone = true;
      filesUnwatch(projectId, id).catch(() => {});
    };
  }, [workspaceId, projectId]);

  const toggle = (dir: string) => {
    const next = new Set(expanded);
    if (next.has(dir)) {
      next.delete(dir);
    } else {
      next.add(dir);
      void load(dir);
      filesFollow(projectId, dir).catch(() => {});
    }
    setExpanded(next);
  };

  const list = (dir: string, depth: number) => (
    <ul class="tree-list">
      {(listings[dir] ?? []).map((entry) => {
        const path = join(dir, entry.name);
        if (entry.kind === "dir") {
          const open = expanded.has(path);
          return (
            <li key={path}>
              <button class="tree-row dir" data-path={path} style={{ paddingLeft: `${depth * 14 + 4}px` }} onClick={() => toggle(path)}>
                {open ? "▾" : "▸"} {entry.name}
              </button>
              {open ? list(path, depth + 1) : null}
            </li>
          );
        }
        return (
          <li key={path}>
            <button
              class={`tree-row file${selected === path ? " selected" : ""}`}
              data-path={path}
              style={{ paddingLeft: `${depth * 14 + 18}px` }}
              onClick={() => onOpen(path)}
            >
              {entry.name}
            </button>
          </li>
        );
      })}
    </ul>
  );

  return (
    <div class="file-tree">
      <h3>Files</h3>
      {error ? <p class="hint">{error}</p> : null}
      {listings[""] && listings[""].length === 0 ? <p class="empty">No files.</p> : list("", 0)}
    </div>
  );
}
