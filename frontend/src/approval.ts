// The approval dialogs: a pending pairing (client name, the code it showed the agent, the
// workspaces to grant, none preselected) and an operation waiting for the person's decision
// (what exactly it will do).

import { FAMILIES, type Decision, type Pairing, type Workspace } from "./api";
import { createElement } from "preact";
import { useState } from "preact/hooks";
import { h, type VNode } from "./dom";
import { renderEffect } from "./effect";
import type { RuleDraft } from "./generated/protocol";
import { type Names, rememberChoices, waitsBecause } from "./rules";

export interface PairingActions {
  /** `families`: the ticked tool families (all of them is every family, later ones too). */
  approve(pairingId: string, workspaces: string[], session: boolean, families: string[]): void;
  deny(pairingId: string): void;
}

/** What the dialog says about the ticked workspaces. */
export function grantSummary(count: number): string {
  return count === 0
    ? "No workspace ticked: the agent will see nothing until you grant one."
    : `The agent will see ${count} workspace${count === 1 ? "" : "s"} and nothing else.`;
}

/** The ticked boxes of a kind in the dialog a click came from, by their data attribute. */
/** Where a client that signs in sends the browser back, and where its name came from: its
 * client ID metadata document (an https URL Lomi fetched), or its own registration. */
export function signInRows(signIn: Pairing["signIn"]): VNode[] {
  if (!signIn) return [];
  return [
    labelled("redirect-row", "Sends you back to", h("strong", { class: "redirect-host" }, signIn.redirectHost)),
    labelled(
      "metadata-row",
      "Its name comes from",
      signIn.metadataUrl
        ? h("code", { class: "metadata-source" }, signIn.metadataUrl)
        : h("span", { class: "metadata-source" }, "its own registration with Lomi (not checked)"),
    ),
  ];
}

/** One row of the dialog: a label, then its value. */
function labelled(rowClass: string, label: string, value: VNode): VNode {
  return h("p", { class: rowClass }, h("span", { class: "label" }, label), value);
}

function ticked(event: Event, selector: string, attribute: string): string[] {
  const dialog = (event.currentTarget as HTMLElement).closest(".dialog");
  return [...(dialog?.querySelectorAll<HTMLInputElement>(selector) ?? [])]
    .filter((box) => box.checked)
    .map((box) => box.getAttribute(attribute)!);
}

interface PairingDialogProps {
  pairing: Pairing;
  workspaces: Workspace[];
  actions: PairingActions;
}

/** The dialog for one pending pairing. The boxes are the person's: a re-render never unticks one. */
function PairingDialog({ pairing, workspaces, actions }: PairingDialogProps): VNode {
  const [count, setCount] = useState(0);
  const approve = (session: boolean) => (event: Event) =>
    actions.approve(
      pairing.pairingId,
      ticked(event, "input.grant", "data-workspace-id"),
      session,
      // Every family ticked is "all": Lomi then also shows families a later version adds.
      ticked(event, "input.family", "data-family"),
    );
  // What the client asked for (an OAuth client's scopes) is ticked; a client that did not say
  // gets every family ticked.
  const asked = pairing.requestedFamilies ?? null;
  return h(
    "div",
    {
      class: "dialog approval",
      id: "approval-dialog",
      role: "dialog",
      "aria-modal": "true",
      "aria-labelledby": "approval-title",
      "data-pairing-id": pairing.pairingId,
    },
    h("h2", { id: "approval-title" }, "An agent asks to work in Lomi"),
    labelled("client", "Client", h("strong", { class: "client-name" }, pairing.clientName)),
    ...signInRows(pairing.signIn),
    labelled("code-row", "Verification code", h("code", { class: "verification-code" }, pairing.verificationCode)),
    h(
      "p",
      { class: "hint" },
      "Approve only if the agent showed you this same code. ",
      pairing.credential !== "session"
        ? "Approved, it stays paired across restarts until you revoke it."
        : "It is paired for its current session.",
    ),
    h("h3", {}, "Workspaces it may use"),
    workspaces.length === 0
      ? h("p", { class: "empty" }, "No workspace yet: add one in Settings first.")
      : h(
          "div",
          { class: "grants" },
          ...workspaces.map((workspace) =>
            h(
              "label",
              { class: "grant-row", for: `grant-${workspace.workspaceId}`, key: workspace.workspaceId },
              h("input", {
                type: "checkbox",
                class: "grant",
                "data-workspace-id": workspace.workspaceId,
                id: `grant-${workspace.workspaceId}`,
                onchange: (event: Event) => setCount(ticked(event, "input.grant", "data-workspace-id").length),
              }),
              h("span", { class: "grant-name" }, workspace.name),
              h("span", { class: "grant-projects" }, workspace.projects.map((p) => p.root).join(", ")),
            ),
          ),
        ),
    h("p", { class: "grant-summary" }, grantSummary(count)),
    h("h3", {}, "Tools it may see"),
    h(
      "div",
      { class: "families" },
      ...FAMILIES.map((family) =>
        h(
          "label",
          { class: "family-row", for: `family-${family.name}`, key: family.name },
          h("input", {
            type: "checkbox",
            class: "family",
            "data-family": family.name,
            id: `family-${family.name}`,
            defaultChecked: asked === null || asked.includes(family.name),
          }),
          h("span", {}, family.label),
        ),
      ),
    ),
    h(
      "div",
      { class: "buttons" },
      h("button", { id: "deny", class: "secondary", onclick: () => actions.deny(pairing.pairingId) }, "Deny"),
      h("button", { id: "approve-session", class: "secondary", onclick: approve(true) }, "Approve for this session"),
      h("button", { id: "approve", class: "primary", onclick: approve(false) }, "Approve"),
    ),
  );
}

/** The dialog for one pending pairing. */
export function pairingDialog(pairing: Pairing, workspaces: Workspace[], actions: PairingActions): VNode {
  return createElement(PairingDialog, { pairing, workspaces, actions, key: pairing.pairingId });
}

export interface DecisionActions {
  decide(operationId: string, approve: boolean): void;
  /** The decision with a rule to keep ("approve and always allow …"); rejects with the
   * broker's refusal, and the operation keeps waiting. */
  remember(operationId: string, approve: boolean, rule: RuleDraft): Promise<void>;
}

/** What an operation will do, in words: the broker's own sentence for it (the tool's definition
 * previews it), where it acts. */
export function describeOperation(decision: Decision, workspaces: Workspace[]): string {
  const args = decision.arguments;
  const workspace = workspaces.find((w) => w.workspaceId === decision.workspaceId);
  const project = workspace?.projects.find((p) => p.projectId === (args.projectId ?? decision.projectId));
  const place = project ? project.root : workspace ? `workspace ${workspace.name}` : null;
  return place ? `In ${place}: ${decision.effect.summary}` : decision.effect.summary;
}

/** The dialog for one operation waiting for the person. `names` names the agents,
 * workspaces, tools and rules of the suggested rule. */
export function decisionDialog(
  decision: Decision,
  clientName: string,
  workspaces: Workspace[],
  actions: DecisionActions,
  names: Names = { pairings: [], workspaces, policy: [] },
): VNode {
  return h(
    "div",
    {
      class: "dialog decision",
      id: "decision-dialog",
      role: "dialog",
      "aria-modal": "true",
      "data-operation-id": decision.operationId,
    },
    h("h2", {}, "An operation waits for your decision"),
    h(
      "p",
      { class: "client" },
      h("span", { class: "label" }, "Client"),
      h("strong", { class: "client-name" }, clientName),
    ),
    h("p", { class: "what" }, describeOperation(decision, workspaces)),
    h("p", { class: "why-waits hint" }, waitsBecause(decision.decidedBy, names)),
    renderEffect(decision.effect),
    h(
      "details",
      {},
      h("summary", {}, `${decision.tool}: exact arguments`),
      h("pre", { class: "arguments" }, JSON.stringify(decision.arguments, null, 2)),
    ),
    h(
      "div",
      { class: "buttons" },
      h(
        "button",
        { id: "decision-deny", class: "secondary", onclick: () => actions.decide(decision.operationId, false) },
        "Deny",
      ),
      h(
        "button",
        { id: "decision-approve", class: "primary", onclick: () => actions.decide(decision.operationId, true) },
        "Approve",
      ),
    ),
    rememberChoices({
      operationId: decision.operationId,
      suggested: decision.suggestedRule,
      names,
      decide: (approve, rule) => actions.remember(decision.operationId, approve, rule),
    }),
  );
}
