// A workspace's files, Git view and editor together: the workspace's "Files" view, beside
// its panels (registered in panels.tsx's workspaceViews).

import { useState } from "preact/hooks";
import { control, type Workspace } from "./api";
import { Editor } from "./editor";
import { FileTree } from "./files";
import { DiffView, GitView, type DiffSelection } from "./git";
import { type WorkspaceViewProps, workspaceViews } from "./panels";
import type { Control } from "./project-api";

export interface WorkbenchProps {
  workspace: Workspace;
  control: Control;
}

export function Workbench({ workspace, control }: WorkbenchProps) {
  const [projectId, setProjectId] = useState(workspace.projects[0]?.projectId ?? "");
  const [open, setOpen] = useState<string | null>(null);
  const [diff, setDiff] = useState<DiffSelection | null>(null);
  const [changes, setChanges] = useState(0);
  const changed = () => setChanges((n) => n + 1);
  return (
    <div class="workbench" data-workspace-id={workspace.workspaceId}>
      <div class="workbench-head">
        <strong>{workspace.name}</strong>
        {workspace.projects.length > 1 ? (
          <select
            value={projectId}
            onChange={(e) => {
              setProjectId((e.target as HTMLSelectElement).value);
              setOpen(null);
              setDiff(null);
            }}
          >
            {workspace.projects.map((p) => (
              <option key={p.projectId} value={p.projectId}>
                {p.name}
              </option>
            ))}
          </select>
        ) : (
          <span class="hint">{workspace.projects[0]?.root}</span>
        )}
      </div>
      <div class="workbench-body">
        <div class="workbench-side">
          <FileTree
            workspaceId={workspace.workspaceId}
            projectId={projectId}
            control={control}
            selected={open}
            onOpen={(path) => {
              setOpen(path);
              setDiff(null);
            }}
            onChanged={changed}
          />
          <GitView
            workspaceId={workspace.workspaceId}
            projectId={projectId}
            control={control}
            changes={changes}
            onSelect={setDiff}
            onChanged={changed}
          />
        </div>
        <div class="workbench-main">
          {diff ? (
            <DiffView workspaceId={workspace.workspaceId} projectId={projectId} control={control} changes={changes} {...diff} />
          ) : null}
          {open ? (
            <Editor key={`${projectId}:${open}`} workspaceId={workspace.workspaceId} projectId={projectId} path={open} control={control} changes={changes} />
          ) : diff ? null : (
            <p class="empty">Open a file from the tree, or a change from the Git view.</p>
          )}
        </div>
      </div>
    </div>
  );
}

/** A workspace's "Files" view beside its panels: its project's tree, Git and editor. */
workspaceViews.set("files", {
  label: "Files",
  component: ({ workspace }: WorkspaceViewProps) => (
    <Workbench key={workspace.workspaceId} workspace={workspace} control={control} />
  ),
});
