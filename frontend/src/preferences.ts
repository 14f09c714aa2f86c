// Settings → the person's preference sections (terminal, browser, editor, chat, providers):
// each shows its fields and saves the changed ones with `settingsSet`, compared with the
// section's revision, so a change an agent or `lomi settings set` made meanwhile is not
// overwritten (the save answers REVISION_MISMATCH and the view shows the current values).
// Provider keys go to the OS keyring with `providerKey`; only `keyStored` ever comes back.

import type { SettingsSections, SettingsSectionView } from "./api";
import { h, type VNode } from "./dom";

export type FieldKind = "int" | "text" | "longtext" | "bool" | "lineEndings" | "viewport";

export interface Field {
  key: string;
  label: string;
  kind: FieldKind;
}

/** The editable sections and their fields, in the order the view shows them. */
export const SECTIONS: { section: keyof SettingsSections; title: string; fields: Field[] }[] = [
  {
    section: "terminal",
    title: "Terminals",
    fields: [
      { key: "shell", label: "Shell (empty: $SHELL)", kind: "text" },
      { key: "cols", label: "Columns", kind: "int" },
      { key: "rows", label: "Rows", kind: "int" },
      { key: "scrollbackLines", label: "Scrollback lines", kind: "int" },
    ],
  },
  {
    section: "browser",
    title: "Browsers",
    fields: [
      { key: "viewport", label: "Viewport (width×height)", kind: "viewport" },
      { key: "defaultWaitMs", label: "Default wait (ms)", kind: "int" },
      { key: "persistentProfileDefault", label: "New workspaces keep browser sign-ins", kind: "bool" },
      { key: "deterministicCaptures", label: "Hold pages still for captures", kind: "bool" },
    ],
  },
  {
    section: "editor",
    title: "Editor",
    fields: [
      { key: "tabWidth", label: "Tab width", kind: "int" },
      { key: "lineEndings", label: "Line endings of new files", kind: "lineEndings" },
    ],
  },
  {
    section: "chat",
    title: "Chat",
    fields: [
      { key: "defaultProvider", label: "Default provider", kind: "text" },
      { key: "defaultModel", label: "Default model", kind: "text" },
      { key: "systemPrompt", label: "System prompt", kind: "longtext" },
    ],
  },
  {
    section: "network",
    title: "Agents",
    fields: [
      {
        key: "sessionPairing",
        label: "Let a client that cannot sign in wait for my approval, for its session only",
        kind: "bool",
      },
    ],
  },
];

/** What a field shows in its input. */
export function shown(kind: FieldKind, value: unknown): string {
  if (kind === "viewport") {
    const v = value as { width?: number; height?: number } | undefined;
    return v ? `${v.width}x${v.height}` : "";
  }
  if (value === undefined || value === null) return "";
  return String(value);
}

/** The JSON value of what the person typed, or an error that says what to type. */
export function parse(kind: FieldKind, raw: string | boolean): { value: unknown } | { error: string } {
  if (kind === "bool") return { value: Boolean(raw) };
  const text = String(raw).trim();
  switch (kind) {
    case "int":
      return /^\d{1,9}$/.test(text) ? { value: Number(text) } : { error: "a whole number" };
    case "viewport": {
      const match = /^(\d{1,5})\s*[x×]\s*(\d{1,5})$/.exec(text);
      return match
        ? { value: { width: Number(match[1]), height: Number(match[2]) } }
        : { error: "width x height, e.g. 1280x720" };
    }
    case "lineEndings":
      return text === "lf" || text === "crlf" ? { value: text } : { error: "lf or crlf" };
    case "longtext":
      return { value: String(raw) };
    default:
      return { value: text };
  }
}

/**
 * The fields whose typed value differs from the section's current value, ready for
 * `settingsSet`; or the first field that does not parse.
 */
export function changedValues(
  fields: Field[],
  section: object,
  typed: Record<string, string | boolean>,
): { values: Record<string, unknown> } | { error: string } {
  const current = byName(section);
  const values: Record<string, unknown> = {};
  for (const field of fields) {
    if (!(field.key in typed)) continue;
    const parsed = parse(field.kind, typed[field.key]);
    if ("error" in parsed) return { error: `${field.label}: ${parsed.error}` };
    if (JSON.stringify(parsed.value) !== JSON.stringify(current[field.key])) values[field.key] = parsed.value;
  }
  return { values };
}

/** A section as the forms read any section: its revision and its fields by name. */
function byName(section: object): SettingsSectionView {
  return section as SettingsSectionView;
}

/** The request that saves a section's changes, compared with the revision it was shown at. */
export function saveRequest(section: string, values: Record<string, unknown>, revision: string) {
  return { settingsSet: { section, values, expectedSettingsRevision: revision } };
}

export type { Provider } from "./generated/protocol";
import type { Provider } from "./generated/protocol";

/** The request that adds or replaces a provider (models typed comma-separated). */
export function providerRequest(name: string, kind: string, baseUrl: string, models: string, revision: string) {
  const list = models
    .split(",")
    .map((m) => m.trim())
    .filter((m) => m.length > 0);
  return saveRequest("providers", { [name.trim()]: { kind, baseUrl: baseUrl.trim(), models: list } }, revision);
}

export interface PreferencesActions {
  /** Sends a control request (`settingsSet`, `providerKey`) and reports its error. */
  send(what: string, request: Record<string, unknown>): void;
  /** Shows a message that needs no request (a field that does not parse). */
  say(message: string): void;
}

function typedValues(form: HTMLFormElement, fields: Field[]): Record<string, string | boolean> {
  const typed: Record<string, string | boolean> = {};
  for (const field of fields) {
    const input = form.querySelector<HTMLInputElement | HTMLTextAreaElement | HTMLSelectElement>(
      `[data-key="${field.key}"]`,
    );
    if (!input) continue;
    typed[field.key] = field.kind === "bool" ? (input as HTMLInputElement).checked : input.value;
  }
  return typed;
}

function input(section: string, field: Field, value: unknown): VNode {
  const common = { class: "setting", "data-section": section, "data-key": field.key };
  switch (field.kind) {
    case "bool":
      return h("input", { ...common, type: "checkbox", checked: Boolean(value) });
    case "longtext":
      return h("textarea", { ...common, rows: 4 }, shown(field.kind, value));
    case "lineEndings":
      return h(
        "select",
        common,
        h("option", { value: "lf", selected: value === "lf" }, "LF (Linux, macOS)"),
        h("option", { value: "crlf", selected: value === "crlf" }, "CRLF (Windows)"),
      );
    default:
      return h("input", { ...common, type: "text", value: shown(field.kind, value) });
  }
}

/** The preference sections, each a form with its fields, its revision and Save. */
export function preferencesSection(sections: SettingsSections | null, actions: PreferencesActions): VNode {
  if (!sections) return h("section", { id: "settings-preferences" }, h("h2", {}, "Preferences"), h("p", {}, "…"));
  const forms = SECTIONS.filter(({ section }) => sections[section]).map(({ section, title, fields }) => {
    const current = byName(sections[section] as object);
    return h(
      "form",
      {
        class: "preferences",
        id: `settings-${section}`,
        "data-revision": current.settingsRevision,
        onsubmit: (event: Event) => {
          event.preventDefault();
          const changed = changedValues(fields, current, typedValues(event.currentTarget as HTMLFormElement, fields));
          if ("error" in changed) return actions.say(changed.error);
          if (Object.keys(changed.values).length === 0) return actions.say(`${title}: nothing changed`);
          actions.send(title, saveRequest(section, changed.values, current.settingsRevision));
        },
      },
      h("h3", {}, title, h("span", { class: "revision" }, ` revision ${current.settingsRevision}`)),
      ...fields.map((field) => h("label", {}, field.label, " ", input(section, field, current[field.key]))),
      h("button", { type: "submit", class: "save-section" }, "Save"),
    );
  });
  const providers = sections.providers;
  const list = ((providers?.providers as Provider[] | undefined) ?? []).map((p) =>
    h(
      "li",
      { class: "provider", "data-provider": p.name },
      h("strong", {}, p.name),
      ` ${p.kind} ${p.baseUrl} — ${p.models.join(", ") || "no models listed"} — `,
      h("span", { class: "key-stored" }, p.keyStored ? "key stored in the keyring" : "no key"),
      h(
        "form",
        {
          class: "inline provider-key",
          onsubmit: (event: Event) => {
            event.preventDefault();
            const field = (event.currentTarget as HTMLFormElement).querySelector<HTMLInputElement>("input");
            const key = field?.value ?? "";
            if (field) field.value = "";
            if (key) actions.send("Provider key", { providerKey: { name: p.name, key } });
          },
        },
        h("input", { type: "password", autocomplete: "off", placeholder: "API key" }),
        h("button", { type: "submit" }, "Store key"),
      ),
    ),
  );
  const add = h(
    "form",
    {
      class: "inline",
      id: "provider-add",
      onsubmit: (event: Event) => {
        event.preventDefault();
        const form = event.currentTarget as HTMLFormElement;
        const value = (name: string) =>
          form.querySelector<HTMLInputElement | HTMLSelectElement>(`[name="${name}"]`)?.value ?? "";
        if (!value("name").trim()) return actions.say("Providers: give the provider a name");
        actions.send(
          "Providers",
          providerRequest(value("name"), value("kind"), value("baseUrl"), value("models"), providers?.settingsRevision ?? "1"),
        );
      },
    },
    h("input", { name: "name", placeholder: "Name (e.g. openai)" }),
    h(
      "select",
      { name: "kind" },
      h("option", { value: "openai_compatible" }, "OpenAI-compatible"),
      h("option", { value: "anthropic" }, "Anthropic"),
    ),
    h("input", { name: "baseUrl", placeholder: "https://api.openai.com/v1" }),
    h("input", { name: "models", placeholder: "models, comma-separated" }),
    h("button", { type: "submit" }, "Add or replace provider"),
  );
  return h(
    "section",
    { id: "settings-preferences" },
    h("h2", {}, "Preferences"),
    h("p", { class: "hint" }, "Agents may change these too (lomi_settings_update); a save made meanwhile is never overwritten."),
    ...forms,
    h("h3", {}, "Model providers", h("span", { class: "revision" }, ` revision ${providers?.settingsRevision ?? "?"}`)),
    h("ul", { class: "providers" }, ...list),
    add,
  );
}
