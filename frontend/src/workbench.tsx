// A workspace's files, Git view and editor together, opened from the workspace's "Files"
// button. Self-contained: rendered with Preact into its own element over the window, so
// the components can move into any layout as they are.

import { render } from "preact";
import { useState } from "preact/hooks";
import { control, type Workspace } from "./api";
import { Editor } from "./editor";
import { FileTree } from "./files";
import { DiffView, GitView, type DiffSelection } from "./git";
import type { Control } from "./project-api";

export interface WorkbenchProps {
  workspace: Workspace;
  control: Control;
  onClose(): void;
}

export function Workbench({ workspace, control, onClose }: WorkbenchProps) {
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
        <button class="close-workbench small" onClick={onClose}>
          Close
        </button>
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

/** Shows a workspace's workbench over the window until the person closes it. */
export function openWorkbench(workspace: Workspace): void {
  document.getElementById("workbench-layer")?.remove();
  const layer = document.createElement("div");
  layer.id = "workbench-layer";
  document.body.append(layer);
  const close = () => {
    render(null, layer);
    layer.remove();
  };
  render(<Workbench workspace={workspace} control={control} onClose={close} />, layer);
}
