// The person's rules in the window: a rule in words, the "always" choices of a decision (the
// suggested rule as the person edits it), and Settings → Rules (the rules with their use, remove,
// add). The rules themselves, their checks and the refusals' words are the broker's.

import { createElement } from "preact";
import { useState } from "preact/hooks";
import { FAMILIES, type Pairing, type PolicyEntry, type Workspace } from "./api";
import { ago, h, type VNode } from "./dom";
import type { RuleDraft, RulesView, RuleUse, SubjectKind, Verdict } from "./generated/protocol";

/** What the window knows to name ids and tools in words. */
export interface Names {
  pairings: Pairing[];
  workspaces: Workspace[];
  policy: PolicyEntry[];
  /** The kept rules, when read (to name the rule that decided something). */
  rules?: RuleUse[];
}

export function agentName(names: Names, pairingId: string): string {
  return names.pairings.find((p) => p.pairingId === pairingId)?.clientName ?? pairingId;
}

export function workspaceName(names: Names, workspaceId: string): string {
  return names.workspaces.find((w) => w.workspaceId === workspaceId)?.name ?? workspaceId;
}

/** `*`, a family or a tool, in the person's words (the policy's labels, from the broker). */
export function toolsWords(names: Names, tools: string): string {
  if (tools === "*") return "every tool";
  const family = FAMILIES.find((f) => f.name === tools);
  if (family) return `${family.label} (every tool)`;
  const entry = names.policy.find((p) => p.tool === tools);
  return entry?.label ? `“${entry.label}”` : tools;
}

const SUBJECT_WORDS: Record<SubjectKind, string> = {
  paths: "paths",
  url: "addresses",
  command: "command lines",
  package: "packages",
};

const VERDICT_WORDS: Record<Verdict, string> = { allow: "Allow", ask: "Ask before", deny: "Deny" };

/** What a rule is about, in words: "“Write files” on paths docs/**, for Claude Code, in Alpha". */
export function ruleScope(draft: RuleDraft, names: Names): string {
  const subject = draft.subject ? ` on ${SUBJECT_WORDS[draft.subject.kind]} ${draft.subject.pattern}` : "";
  const agent = draft.agent ? agentName(names, draft.agent) : "any agent";
  const workspace = draft.workspace ? workspaceName(names, draft.workspace) : "any workspace";
  return `${toolsWords(names, draft.tools)}${subject}, for ${agent}, in ${workspace}`;
}

/** A rule in words: "Allow “Write files” on paths docs/**, for Claude Code, in Alpha". */
export function ruleWords(draft: RuleDraft, names: Names): string {
  return `${VERDICT_WORDS[draft.verdict]} ${ruleScope(draft, names)}`;
}

/** How the person edited a decision's suggested rule. */
export interface RememberEdit {
  /** The subject pattern as typed (ignored when the suggestion has no subject). */
  pattern: string;
  anyAgent: boolean;
  anyWorkspace: boolean;
}

/** The rule "approve and always allow" (or "deny and always deny") saves: the suggestion with
 * the person's edits and the verdict of their decision. */
export function rememberDraft(suggested: RuleDraft, approve: boolean, edit: RememberEdit): RuleDraft {
  const draft: RuleDraft = { ...suggested, verdict: approve ? "allow" : "deny" };
  if (draft.subject) draft.subject = { ...draft.subject, pattern: edit.pattern };
  if (edit.anyAgent) delete draft.agent;
  if (edit.anyWorkspace) delete draft.workspace;
  return draft;
}

/** A decided-by of a receipt or a decision (`default`, `person`, `remembered`, `rule:<id>`) in
 * words, naming the rule when it is still kept. */
export function decidedByWords(by: string, names: Names): string {
  if (by === "default") return "the tool's default (Ask me before)";
  if (by === "person") return "you";
  if (by === "remembered") return "a choice you remembered";
  if (by.startsWith("rule:")) {
    const id = by.slice("rule:".length);
    const rule = names.rules?.find((r) => r.ruleId === id);
    return rule ? `rule: ${ruleWords(rule, names)}` : `rule ${id} (removed)`;
  }
  return by;
}

/** Why a decision waits, for its dialog. */
export function waitsBecause(by: string, names: Names): string {
  if (by === "default") return "It waits because “Ask me before” is on for this tool (Settings).";
  return `It waits because of ${decidedByWords(by, names)}.`;
}

export interface RememberProps {
  suggested: RuleDraft;
  names: Names;
  /** Sends the decision with the rule; rejects with the broker's refusal. */
  decide(approve: boolean, remember: RuleDraft): Promise<void>;
}

/** "Approve and always allow …" / "Deny and always deny …": the suggested rule in words, its
 * pattern editable and widened to any agent or workspace by the person before it is saved. A
 * refusal (a malformed pattern) is shown here; the operation keeps waiting. */
function Remember({ suggested, names, decide }: RememberProps): VNode {
  const [edit, setEdit] = useState<RememberEdit>({
    pattern: suggested.subject?.pattern ?? "",
    anyAgent: false,
    anyWorkspace: false,
  });
  const [refused, setRefused] = useState<string | null>(null);
  const [sending, setSending] = useState(false);
  const shown = rememberDraft(suggested, true, edit);
  const send = (approve: boolean) => {
    setSending(true);
    setRefused(null);
    decide(approve, rememberDraft(suggested, approve, edit))
      .catch((error: Error) => setRefused(`Not saved: ${error.message}. The operation still waits for you.`))
      .finally(() => setSending(false));
  };
  const box = (id: string, label: string, checked: boolean, change: (on: boolean) => void) =>
    h(
      "label",
      { class: "remember-widen" },
      h("input", {
        type: "checkbox",
        id,
        checked,
        onchange: (event: Event) => change((event.target as HTMLInputElement).checked),
      }),
      ` ${label}`,
    );
  return h(
    "div",
    { class: "remember", id: "remember" },
    h("h3", {}, "Or decide calls like this one from now on"),
    h("p", { class: "remember-rule", id: "remember-rule" }, ruleScope(shown, names)),
    suggested.subject
      ? h(
          "label",
          { class: "remember-pattern" },
          h("span", { class: "label" }, `Matching ${SUBJECT_WORDS[suggested.subject.kind]}`),
          h("input", {
            type: "text",
            id: "remember-pattern",
            value: suggested.subject.pattern,
            spellcheck: false,
            oninput: (event: Event) => {
              setRefused(null);
              setEdit((now) => ({ ...now, pattern: (event.target as HTMLInputElement).value }));
            },
          }),
        )
      : null,
    h(
      "div",
      { class: "remember-widening" },
      suggested.agent
        ? box("remember-any-agent", `any agent (not only ${agentName(names, suggested.agent)})`, edit.anyAgent, (on) =>
            setEdit((now) => ({ ...now, anyAgent: on })),
          )
        : null,
      suggested.workspace
        ? box(
            "remember-any-workspace",
            `any workspace (not only ${workspaceName(names, suggested.workspace)})`,
            edit.anyWorkspace,
            (on) => setEdit((now) => ({ ...now, anyWorkspace: on })),
          )
        : null,
    ),
    refused ? h("p", { class: "remember-error error", id: "remember-error", role: "alert" }, refused) : null,
    h(
      "div",
      { class: "buttons" },
      h(
        "button",
        { id: "decision-deny-always", class: "danger", disabled: sending, onclick: () => send(false) },
        "Deny and always deny",
      ),
      h(
        "button",
        { id: "decision-approve-always", disabled: sending, onclick: () => send(true) },
        "Approve and always allow",
      ),
    ),
  );
}

export function rememberChoices(props: RememberProps & { operationId: string }): VNode {
  return createElement(Remember, { ...props, key: props.operationId });
}

// ---- Settings → Rules ----

export interface RulesActions {
  /** `ruleAdd` compared with the revision shown; rejects with the broker's refusal. */
  add(rule: RuleDraft, expectedRevision: string | undefined): Promise<void>;
  /** `ruleRemove` compared with the revision shown. */
  remove(ruleId: string, expectedRevision: string | undefined): Promise<void>;
}

/** What the add form's fields hold. */
export interface RuleForm {
  verdict: Verdict;
  tools: string;
  /** "" for any subject. */
  kind: SubjectKind | "";
  pattern: string;
  /** "" for any. */
  agent: string;
  workspace: string;
  /** A `datetime-local` value ("" for never), read in the person's time zone. */
  expires: string;
}

/** The draft the add form describes. */
export function formDraft(form: RuleForm): RuleDraft {
  const draft: RuleDraft = { tools: form.tools, verdict: form.verdict };
  if (form.kind) draft.subject = { kind: form.kind, pattern: form.pattern.trim() };
  if (form.agent) draft.agent = form.agent;
  if (form.workspace) draft.workspace = form.workspace;
  if (form.expires) draft.expiresAt = new Date(form.expires).toISOString();
  return draft;
}

/** "3 operations, 2 terminal lines". */
export function useWords(rule: RuleUse): string {
  const count = (n: number, one: string) => `${n} ${one}${n === 1 ? "" : "s"}`;
  return rule.lines > 0
    ? `${count(rule.operations, "operation")}, ${count(rule.lines, "terminal line")}`
    : count(rule.operations, "operation");
}

export function expiryWords(rule: RuleUse): string {
  if (!rule.expiresAt) return "never";
  const when = new Date(rule.expiresAt).toLocaleString();
  return rule.expired ? `expired ${when}` : `until ${when}`;
}

interface RulesSectionProps {
  view: RulesView | null;
  names: Names;
  actions: RulesActions;
  now: Date;
}

function read(form: HTMLFormElement, name: string): string {
  return (form.elements.namedItem(name) as HTMLInputElement | HTMLSelectElement | null)?.value ?? "";
}

function RulesSection({ view, names, actions, now }: RulesSectionProps): VNode {
  const [refused, setRefused] = useState<string | null>(null);
  const [kind, setKind] = useState<SubjectKind | "">("");
  const revision = view?.settingsRevision;
  const submit = (event: Event) => {
    event.preventDefault();
    const form = event.currentTarget as HTMLFormElement;
    const draft = formDraft({
      verdict: read(form, "verdict") as Verdict,
      tools: read(form, "tools"),
      kind: read(form, "kind") as SubjectKind | "",
      pattern: read(form, "pattern"),
      agent: read(form, "agent"),
      workspace: read(form, "workspace"),
      expires: read(form, "expires"),
    });
    setRefused(null);
    actions
      .add(draft, revision)
      .then(() => {
        form.reset();
        setKind("");
      })
      .catch((error: Error) => setRefused(error.message));
  };
  const remove = (ruleId: string) => {
    setRefused(null);
    actions.remove(ruleId, revision).catch((error: Error) => setRefused(error.message));
  };
  const option = (value: string, label: string) => h("option", { value }, label);
  const select = (name: string, label: string, ...options: VNode[]) =>
    h("label", { class: "rule-field" }, h("span", {}, label), h("select", { name, id: `rule-${name}` }, ...options));
  const rules = view?.rules ?? [];
  return h(
    "section",
    { id: "settings-rules" },
    h("h2", {}, "Rules"),
    h(
      "p",
      { class: "hint" },
      "Rules decide agents' changes and the lines they type into terminals before “Ask me before” does: a matching deny always wins, otherwise the most specific rule decides. A rule never lets an agent do more than its pairing allows.",
    ),
    view?.paused ? h("p", { class: "paused-note" }, "Agents are paused: every agent's changes are refused until you resume.") : null,
    view && view.pausedAgents.length > 0
      ? h("p", { class: "paused-note" }, `Paused one by one: ${view.pausedAgents.map((id) => agentName(names, id)).join(", ")}`)
      : null,
    view === null
      ? h("p", { class: "empty" }, "Reading the rules…")
      : rules.length === 0
        ? h("p", { class: "empty" }, "No rules yet: each tool's “Ask me before” setting decides.")
        : h(
            "table",
            { class: "rules" },
            h("thead", {}, h("tr", {}, ...["Rule", "Verdict", "Expires", "Decided", "Last used", ""].map((t) => h("th", {}, t)))),
            h(
              "tbody",
              {},
              ...rules.map((rule) =>
                h(
                  "tr",
                  { class: `rule-row rule-${rule.verdict}${rule.expired ? " expired" : ""}`, "data-rule-id": rule.ruleId },
                  h("td", { class: "rule-words", title: rule.ruleId }, ruleWords(rule, names)),
                  h("td", { class: "rule-verdict" }, h("span", { class: `verdict verdict-${rule.verdict}` }, rule.verdict)),
                  h("td", { class: "rule-expiry" }, expiryWords(rule)),
                  h("td", { class: "rule-use" }, useWords(rule)),
                  h("td", { class: "rule-last" }, ago(rule.lastUsedAt, now)),
                  h("td", {}, h("button", { class: "rule-remove danger small", onclick: () => remove(rule.ruleId) }, "Remove")),
                ),
              ),
            ),
          ),
    h("h3", { class: "rule-add-title" }, "Add a rule"),
    h(
      "form",
      { id: "rule-add", class: "rule-form", onsubmit: submit },
      select("verdict", "Verdict", option("allow", "Allow"), option("ask", "Ask me"), option("deny", "Deny")),
      select(
        "tools",
        "Tools",
        option("*", "Every tool"),
        h("optgroup", { label: "A family" }, ...FAMILIES.map((f) => option(f.name, f.label))),
        h("optgroup", { label: "One tool" }, ...names.policy.map((p) => option(p.tool, p.label ?? p.tool))),
      ),
      h(
        "label",
        { class: "rule-field" },
        h("span", {}, "Acting on"),
        h(
          "select",
          {
            name: "kind",
            id: "rule-kind",
            onchange: (event: Event) => setKind((event.target as HTMLSelectElement).value as SubjectKind | ""),
          },
          option("", "anything"),
          option("paths", "project paths"),
          option("url", "addresses (URLs)"),
          option("command", "command lines"),
          option("package", "Android packages"),
        ),
      ),
      h(
        "label",
        { class: "rule-field" },
        h("span", {}, "Pattern"),
        h("input", {
          type: "text",
          name: "pattern",
          id: "rule-pattern",
          spellcheck: false,
          disabled: kind === "",
          placeholder: PATTERN_EXAMPLES[kind],
        }),
      ),
      select("agent", "Agent", option("", "any agent"), ...names.pairings.filter((p) => p.state === "approved").map((p) => option(p.pairingId, p.clientName))),
      select("workspace", "Workspace", option("", "any workspace"), ...names.workspaces.map((w) => option(w.workspaceId, w.name))),
      h("label", { class: "rule-field" }, h("span", {}, "Expires"), h("input", { type: "datetime-local", name: "expires", id: "rule-expires" })),
      h("button", { type: "submit", id: "rule-add-submit", class: "primary" }, "Add rule"),
    ),
    refused ? h("p", { class: "rule-error error", id: "rule-error", role: "alert" }, refused) : null,
  );
}

const PATTERN_EXAMPLES: Record<SubjectKind | "", string> = {
  "": "choose what it acts on first",
  paths: "docs/** or src/*.rs",
  url: "https://example.com/*",
  command: "npm test* or git push --force*",
  package: "com.example.*",
};

export function rulesSection(view: RulesView | null, names: Names, actions: RulesActions, now: Date): VNode {
  return createElement(RulesSection, { view, names, actions, now });
}

// ---- Pause ----

/** What the top bar's pause control shows for the rules section's pause state. */
export function pauseState(rules: { paused: boolean; pausedAgents: string[] } | null | undefined): {
  paused: boolean;
  button: string;
  badge: string | null;
} {
  if (rules?.paused) return { paused: true, button: "Resume agents", badge: "Agents paused" };
  const some = rules?.pausedAgents.length ?? 0;
  return { paused: false, button: "Pause agents", badge: some ? `${some} agent${some === 1 ? "" : "s"} paused` : null };
}

/** The pause control, always in the top bar: "Pause agents" refuses every agent's changes at
 * once (PAUSED) and asks their running operations to cancel; "Resume agents" lets them run. */
export function pauseControl(
  rules: { paused: boolean; pausedAgents: string[] } | null | undefined,
  toggle: (pause: boolean) => void,
): VNode {
  const state = pauseState(rules);
  return h(
    "span",
    { class: `pause-control${state.paused ? " paused" : ""}` },
    state.badge ? h("span", { class: "paused-badge", id: "paused-badge" }, state.badge) : null,
    h(
      "button",
      {
        id: "pause-agents",
        class: state.paused ? "pause primary" : "pause",
        "aria-pressed": state.paused ? "true" : "false",
        title: state.paused
          ? "Agents' changes are refused (PAUSED) until you resume; reads still work"
          : "Refuse every agent's changes at once and cancel what they are running; reads keep working",
        onclick: () => toggle(!state.paused),
      },
      state.button,
    ),
  );
}
