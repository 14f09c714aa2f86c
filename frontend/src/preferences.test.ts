import { describe, expect, it, vi } from "vitest";
import type { SettingsSections } from "./api";
import { show } from "./test-support";
import { SECTIONS, changedValues, parse, preferencesSection as preferencesSectionVNode, providerRequest, saveRequest } from "./preferences";


const sections: SettingsSections = {
  terminal: { settingsRevision: "3", shell: "", cols: 80, rows: 24, scrollbackLines: 5000 },
  browser: {
    settingsRevision: "1",
    viewport: { width: 1280, height: 720 },
    defaultWaitMs: 10000,
    persistentProfileDefault: false,
    deterministicCaptures: false,
  },
  editor: { settingsRevision: "1", tabWidth: 4, lineEndings: "lf" },
  chat: { settingsRevision: "2", defaultProvider: "", defaultModel: "", systemPrompt: "" },
  providers: {
    settingsRevision: "5",
    providers: [
      { name: "local", kind: "openai_compatible", baseUrl: "http://127.0.0.1:11434/v1", models: ["llama3"], keyStored: true },
    ],
  },
  network: { settingsRevision: "2", mcpUrl: "http://127.0.0.1:7457/mcp", sessionPairing: false },
};

const terminalFields = SECTIONS.find((s) => s.section === "terminal")!.fields;

describe("preference values", () => {
  it("parses what the person typed into the JSON the section takes", () => {
    expect(parse("int", " 100 ")).toEqual({ value: 100 });
    expect(parse("int", "wide")).toEqual({ error: "a whole number" });
    expect(parse("viewport", "1024x768")).toEqual({ value: { width: 1024, height: 768 } });
    expect(parse("viewport", "big")).toHaveProperty("error");
    expect(parse("lineEndings", "crlf")).toEqual({ value: "crlf" });
    expect(parse("bool", true)).toEqual({ value: true });
  });

  it("sends only the fields that changed, compared with the revision shown", () => {
    const typed = { shell: "", cols: "100", rows: "24", scrollbackLines: "5000" };
    const changed = changedValues(terminalFields, sections.terminal!, typed);
    expect(changed).toEqual({ values: { cols: 100 } });
    expect(saveRequest("terminal", { cols: 100 }, "3")).toEqual({
      settingsSet: { section: "terminal", values: { cols: 100 }, expectedSettingsRevision: "3" },
    });
    expect(changedValues(terminalFields, sections.terminal!, { ...typed, rows: "x" })).toEqual({
      error: "Rows: a whole number",
    });
  });

  it("adds a provider without any key in the request", () => {
    const request = providerRequest(" openai ", "openai_compatible", "https://api.openai.com/v1 ", "gpt-4.1, ,o3", "5");
    expect(request).toEqual({
      settingsSet: {
        section: "providers",
        values: { openai: { kind: "openai_compatible", baseUrl: "https://api.openai.com/v1", models: ["gpt-4.1", "o3"] } },
        expectedSettingsRevision: "5",
      },
    });
  });
});

describe("preferencesSection", () => {
  it("shows each section with its revision and saves through settingsSet", () => {
    const send = vi.fn();
    const root = document.body.appendChild(document.createElement("div"));
    show(root, preferencesSectionVNode(sections, { send, say: vi.fn() }));
    const form = root.querySelector<HTMLFormElement>("#settings-terminal")!;
    expect(form.dataset.revision).toBe("3");
    form.querySelector<HTMLInputElement>('[data-key="cols"]')!.value = "132";
    form.querySelector<HTMLButtonElement>(".save-section")!.click();
    expect(send).toHaveBeenCalledWith("Terminals", {
      settingsSet: { section: "terminal", values: { cols: 132 }, expectedSettingsRevision: "3" },
    });
  });

  it("turns session pairing on, sending only that field (the URL is shown, never sent)", () => {
    const send = vi.fn();
    const root = document.body.appendChild(document.createElement("div"));
    show(root, preferencesSectionVNode(sections, { send, say: vi.fn() }));
    const form = root.querySelector<HTMLFormElement>("#settings-network")!;
    const box = form.querySelector<HTMLInputElement>('[data-key="sessionPairing"]')!;
    expect(box.checked).toBe(false);
    box.checked = true;
    form.querySelector<HTMLButtonElement>(".save-section")!.click();
    expect(send).toHaveBeenCalledWith("Agents", {
      settingsSet: { section: "network", values: { sessionPairing: true }, expectedSettingsRevision: "2" },
    });
  });

  it("shows whether a provider key is stored, never a key, and stores a new one", () => {
    const send = vi.fn();
    const root = document.body.appendChild(document.createElement("div"));
    show(root, preferencesSectionVNode(sections, { send, say: vi.fn() }));
    const provider = root.querySelector<HTMLElement>('[data-provider="local"]')!;
    expect(provider.querySelector(".key-stored")!.textContent).toBe("key stored in the keyring");
    const field = provider.querySelector<HTMLInputElement>('input[type="password"]')!;
    field.value = "sk-typed";
    provider.querySelector<HTMLButtonElement>("button")!.click();
    expect(send).toHaveBeenCalledWith("Provider key", { providerKey: { name: "local", key: "sk-typed" } });
    expect(field.value).toBe("");
  });

  it("says so when nothing changed or a value does not parse, without sending", () => {
    const send = vi.fn();
    const say = vi.fn();
    const root = document.body.appendChild(document.createElement("div"));
    show(root, preferencesSectionVNode(sections, { send, say }));
    const form = root.querySelector<HTMLFormElement>("#settings-browser")!;
    form.querySelector<HTMLButtonElement>(".save-section")!.click();
    expect(say).toHaveBeenLastCalledWith("Browsers: nothing changed");
    form.querySelector<HTMLInputElement>('[data-key="viewport"]')!.value = "wide";
    form.querySelector<HTMLButtonElement>(".save-section")!.click();
    expect(say).toHaveBeenLastCalledWith("Viewport (width×height): width x height, e.g. 1280x720");
    expect(send).not.toHaveBeenCalled();
  });
});
