// Lomi's in-page helper. It runs in Lomi's own isolated world of each frame (the page's
// scripts cannot see or change it) and builds the compact snapshot text, numbers elements
// (a number stays with its element for the document's life), and prepares actions: it finds
// the element a ref names, checks that it is still connected and not covered, and installs
// the one-shot listener that reports, through the `lomiAck` binding, that the event reached it.
(() => {
  if (globalThis.__lomi) return;
  const ids = new WeakMap();
  const byId = [null];
  // token → how to stop an action's listener and guard (see `listen` and `guard`).
  const armed = new Map();
  // token → the dragstart a drag's source saw (see `dropWatch`).
  const drags = new Map();
  const NAME_MAX = 100;
  const TEXT_MAX = 200;

  const INTERACTIVE = new Set([
    'link', 'button', 'textbox', 'searchbox', 'checkbox', 'radio', 'combobox', 'listbox',
    'option', 'slider', 'spinbutton', 'switch', 'tab', 'menuitem', 'menuitemcheckbox',
    'menuitemradio', 'treeitem', 'iframe', 'img', 'heading', 'dialog', 'table', 'form',
    'navigation', 'main', 'region', 'search', 'tabpanel', 'grid', 'tree', 'menu', 'menubar',
    'tablist', 'video', 'audio', 'canvas', 'status', 'alert',
  ]);
  // Roles whose accessible name comes from their content.
  const FROM_CONTENT = new Set([
    'link', 'button', 'heading', 'cell', 'columnheader', 'rowheader', 'option', 'tab',
    'menuitem', 'menuitemcheckbox', 'menuitemradio', 'treeitem', 'checkbox', 'radio',
    'switch', 'tooltip', 'legend', 'caption', 'summary',
  ]);
  const SKIP = new Set(['SCRIPT', 'STYLE', 'NOSCRIPT', 'TEMPLATE', 'HEAD', 'META', 'LINK', 'TITLE']);
  // Elements that do not break the text flow around them.
  const INLINE = new Set([
    'SPAN', 'B', 'I', 'EM', 'STRONG', 'SMALL', 'ABBR', 'LABEL', 'SUB', 'SUP', 'MARK', 'U', 'S',
    'Q', 'CITE', 'TIME', 'FONT', 'KBD', 'VAR', 'SAMP', 'DFN', 'BDI', 'BDO', 'DATA', 'WBR', 'INS', 'DEL',
  ]);

  const squash = (s, max) => {
    s = s.replace(/\s+/g, ' ').trim();
    return s.length > max ? s.slice(0, max - 1) + '…' : s;
  };
  const quote = (s) => JSON.stringify(s);
  const pads = [''];
  const pad = (n) => {
    while (pads.length <= n) pads.push(pads[pads.length - 1] + ' ');
    return pads[n];
  };

  function idOf(el) {
    let n = ids.get(el);
    if (n === undefined) {
      n = byId.length;
      byId.push(new WeakRef(el));
      ids.set(el, n);
    }
    return n;
  }

  function inputRole(el) {
    switch ((el.getAttribute('type') || 'text').toLowerCase()) {
      case 'button': case 'submit': case 'reset': case 'image': case 'file': return 'button';
      case 'checkbox': return 'checkbox';
      case 'radio': return 'radio';
      case 'range': return 'slider';
      case 'number': return 'spinbutton';
      case 'search': return 'searchbox';
      case 'hidden': return null;
      default: return el.list ? 'combobox' : 'textbox';
    }
  }

  // Most elements of a large page carry no attributes at all: their attribute lookups are skipped.
  const bare = (el) => el.attributes.length === 0;

  function roleOf(el) {
    const explicit = bare(el) ? null : el.getAttribute('role');
    if (explicit) {
      const first = explicit.trim().split(/\s+/)[0];
      if (first === 'none' || first === 'presentation') return '';
      if (first) return first;
    }
    switch (el.tagName) {
      case 'A': case 'AREA': return el.hasAttribute('href') ? 'link' : '';
      case 'BUTTON': case 'SUMMARY': return 'button';
      case 'INPUT': return inputRole(el);
      case 'SELECT': return el.multiple || el.size > 1 ? 'listbox' : 'combobox';
      case 'OPTION': return 'option';
      case 'TEXTAREA': return 'textbox';
      case 'H1': case 'H2': case 'H3': case 'H4': case 'H5': case 'H6': return 'heading';
      case 'UL': case 'OL': case 'MENU': return 'list';
      case 'LI': return 'listitem';
      case 'TABLE': return 'table';
      case 'TR': return 'row';
      case 'TD': return 'cell';
      case 'TH': return el.closest('thead') ? 'columnheader' : 'rowheader';
      case 'NAV': return 'navigation';
      case 'MAIN': return 'main';
      case 'ASIDE': return 'complementary';
      case 'FORM': return 'form';
      case 'IMG': return el.getAttribute('alt') === '' ? '' : 'img';
      case 'IFRAME': case 'FRAME': return 'iframe';
      case 'DIALOG': return 'dialog';
      case 'P': return 'paragraph';
      case 'FIELDSET': return 'group';
      case 'LEGEND': return 'legend';
      case 'CAPTION': return 'caption';
      case 'PROGRESS': return 'progressbar';
      case 'METER': return 'meter';
      case 'OUTPUT': return 'status';
      case 'HR': return 'separator';
      case 'ARTICLE': return 'article';
      case 'SECTION': return el.hasAttribute('aria-label') || el.hasAttribute('aria-labelledby') ? 'region' : '';
      case 'VIDEO': return 'video';
      case 'AUDIO': return 'audio';
      case 'CANVAS': return 'canvas';
      case 'BLOCKQUOTE': return 'blockquote';
      case 'PRE': case 'CODE': return 'code';
      default: return '';
    }
  }

  function textOf(node) {
    if (node.nodeType === 3) return node.data;
    if (node.nodeType !== 1 || SKIP.has(node.tagName)) return '';
    if (node.getAttribute('aria-hidden') === 'true') return '';
    let s = '';
    for (let c = node.firstChild; c; c = c.nextSibling) s += textOf(c);
    return s;
  }

  function nameOf(el, role) {
    const plain = bare(el);
    const by = plain ? null : el.getAttribute('aria-labelledby');
    if (by) {
      const doc = el.ownerDocument;
      const parts = by.split(/\s+/).map((id) => doc.getElementById(id)).filter(Boolean);
      if (parts.length) return squash(parts.map((p) => textOf(p)).join(' '), NAME_MAX);
    }
    const label = plain ? null : el.getAttribute('aria-label');
    if (label && label.trim()) return squash(label, NAME_MAX);
    const tag = el.tagName;
    if (tag === 'INPUT' || tag === 'SELECT' || tag === 'TEXTAREA' || tag === 'METER' || tag === 'PROGRESS') {
      if (el.labels && el.labels.length) {
        return squash(Array.from(el.labels, (l) => textOf(l)).join(' '), NAME_MAX);
      }
      const type = (el.getAttribute('type') || '').toLowerCase();
      if (tag === 'INPUT' && (type === 'submit' || type === 'button' || type === 'reset')) {
        return squash(el.value || (type === 'submit' ? 'Submit' : type === 'reset' ? 'Reset' : ''), NAME_MAX);
      }
      if (tag === 'INPUT' && type === 'image') return squash(el.getAttribute('alt') || '', NAME_MAX);
      const placeholder = el.getAttribute('placeholder');
      if (placeholder) return squash(placeholder, NAME_MAX);
    }
    if (tag === 'IMG' || tag === 'AREA') {
      const alt = el.getAttribute('alt');
      if (alt) return squash(alt, NAME_MAX);
    }
    if (tag === 'FIELDSET') {
      const legend = el.querySelector(':scope > legend');
      if (legend) return squash(textOf(legend), NAME_MAX);
    }
    if (tag === 'TABLE') {
      const caption = el.querySelector(':scope > caption');
      if (caption) return squash(textOf(caption), NAME_MAX);
    }
    if (FROM_CONTENT.has(role)) {
      const text = squash(textOf(el), NAME_MAX);
      if (text) return text;
    }
    const title = plain ? null : el.getAttribute('title');
    return title ? squash(title, NAME_MAX) : '';
  }

  const FORM_TAGS = new Set(['INPUT', 'SELECT', 'TEXTAREA', 'BUTTON', 'FIELDSET', 'OPTION', 'OPTGROUP']);

  function states(el, role) {
    let s = '';
    const plain = bare(el);
    if (plain && !FORM_TAGS.has(el.tagName)) {
      if (role === 'heading' && /^H[1-6]$/.test(el.tagName)) return ' level=' + el.tagName[1];
      if (role === 'option' && el.selected) return ' selected';
      return '';
    }
    if (role === 'heading') {
      const level = el.getAttribute('aria-level') || (/^H[1-6]$/.test(el.tagName) ? el.tagName[1] : '');
      if (level) s += ' level=' + level;
    }
    if (role === 'checkbox' || role === 'radio' || role === 'switch' || role === 'menuitemcheckbox' || role === 'menuitemradio') {
      const aria = el.getAttribute('aria-checked');
      const checked = el.tagName === 'INPUT' ? (el.indeterminate ? 'mixed' : el.checked) : aria;
      if (checked === true || checked === 'true') s += ' checked';
      else if (checked === 'mixed') s += ' mixed';
    }
    if (role === 'option' && (el.selected || el.getAttribute('aria-selected') === 'true')) s += ' selected';
    if (role === 'tab' && el.getAttribute('aria-selected') === 'true') s += ' selected';
    const expanded = el.getAttribute('aria-expanded');
    if (expanded === 'true') s += ' expanded';
    else if (expanded === 'false') s += ' collapsed';
    if (el.disabled || el.getAttribute('aria-disabled') === 'true') s += ' disabled';
    if (el.required || el.getAttribute('aria-required') === 'true') s += ' required';
    if (el.readOnly && (el.tagName === 'INPUT' || el.tagName === 'TEXTAREA')) s += ' readonly';
    if (role === 'textbox' || role === 'searchbox' || role === 'spinbutton' || role === 'slider') {
      let v;
      if (el.tagName === 'INPUT' || el.tagName === 'TEXTAREA') {
        v = (el.getAttribute('type') || '').toLowerCase() === 'password' && el.value ? '••••' : el.value;
      } else if (el.isContentEditable) {
        v = textOf(el);
      }
      if (v) s += ' value=' + quote(squash(v, TEXT_MAX));
    } else if (role === 'combobox' && el.tagName === 'SELECT') {
      const opt = el.selectedOptions && el.selectedOptions[0];
      if (opt) s += ' value=' + quote(squash(opt.label || opt.text, NAME_MAX));
    } else if (role === 'combobox' && el.tagName === 'INPUT' && el.value) {
      s += ' value=' + quote(squash(el.value, TEXT_MAX));
    } else if (el.tagName === 'INPUT' && (el.getAttribute('type') || '').toLowerCase() === 'file') {
      s += ' files=' + (el.files ? el.files.length : 0);
    }
    if (role === 'link') {
      const href = el.getAttribute('href');
      if (href && !href.startsWith('#') && !href.startsWith('javascript:')) s += ' url=' + quote(squash(href, TEXT_MAX));
    }
    return s;
  }

  function focusable(el) {
    if (bare(el)) return false;
    if (el.isContentEditable && el.getAttribute('contenteditable') !== null) return true;
    const tabindex = el.getAttribute('tabindex');
    return (tabindex !== null && tabindex !== '-1') || el.hasAttribute('onclick');
  }

  // Builds the snapshot of this frame's document: lines of "indent role "name" [ref] states",
  // text as JSON strings. Returns the text, the refs it contains, and the iframes' refs.
  function snap(prefix) {
    const lines = [];
    const refs = [];
    const iframes = [];
    const doc = document;
    const pending = [];

    function flushText(depth) {
      if (!pending.length) return;
      const text = squash(pending.join(''), TEXT_MAX);
      pending.length = 0;
      if (text) lines.push(pad(depth) + quote(text));
    }

    // `quiet`: text here is not shown (hidden, or a label that names its control).
    function visit(node, depth, quiet) {
      for (let c = node.firstChild; c; c = c.nextSibling) {
        if (c.nodeType === 3) {
          if (!quiet) pending.push(c.data);
          continue;
        }
        if (c.nodeType !== 1) continue;
        const el = c;
        if (SKIP.has(el.tagName)) continue;
        if (el.tagName === 'BR') {
          pending.push(' ');
          continue;
        }
        if (!bare(el) && (el.hidden || el.getAttribute('aria-hidden') === 'true')) continue;
        let shown = el.checkVisibility({ visibilityProperty: true });
        if (!shown && !el.checkVisibility()) continue;
        let role = shown ? roleOf(el) : '';
        if (!role && shown && focusable(el)) role = 'generic';
        if (!role || role === 'paragraph') {
          // A plain container: its children belong to the parent's level; blocks break text.
          const inline = INLINE.has(el.tagName);
          if (!inline) flushText(depth);
          const hush = quiet || !shown || (el.tagName === 'LABEL' && el.control !== null);
          if (el.shadowRoot) visit(el.shadowRoot, depth, hush);
          visit(el, depth, hush);
          if (!inline) flushText(depth);
          continue;
        }
        flushText(depth);
        const name = nameOf(el, role);
        let line = pad(depth) + role;
        if (name) line += ' ' + quote(name);
        if (INTERACTIVE.has(role) || focusable(el) || (!bare(el) && el.hasAttribute('role'))) {
          const ref = prefix + idOf(el);
          refs.push(ref);
          line += ' [' + ref + ']';
          if (role === 'iframe') iframes.push(ref);
        }
        line += states(el, role);
        const at = lines.length;
        lines.push(line);
        // Content that only repeats the name is left out.
        if (role === 'iframe' || role === 'img' || (el.tagName === 'SELECT' && role === 'combobox')) continue;
        if (FROM_CONTENT.has(role) && name && onlyText(el)) continue;
        if (el.shadowRoot) visit(el.shadowRoot, depth + 1, quiet);
        visit(el, depth + 1, quiet);
        flushText(depth + 1);
        // Leading text joins its element's line: `listitem: "text"`.
        const next = lines[at + 1];
        if (next !== undefined && next.charCodeAt(depth) === 32 && next.charCodeAt(depth + 1) === 34) {
          lines[at] += ': ' + next.slice(depth + 1);
          lines.splice(at + 1, 1);
        }
      }
    }

    // True when the element holds nothing but text and inline formatting.
    function onlyText(el) {
      if (!el.firstElementChild) return true;
      for (const d of el.querySelectorAll('*')) {
        if (roleOf(d) || focusable(d)) return false;
      }
      return true;
    }

    const root = doc.body || doc.documentElement;
    if (root) {
      visit(root, 0, false);
      flushText(0);
    }
    return { text: lines.join('\n'), refs, iframes, title: doc.title, url: doc.URL, loading: doc.readyState === 'loading' };
  }

  function element(n) {
    const weak = byId[n];
    const el = weak && weak.deref();
    return el && el.isConnected ? el : null;
  }

  function describe(el) {
    if (!el) return 'nothing';
    let s = el.tagName.toLowerCase();
    if (el.id) s += '#' + el.id;
    const n = ids.get(el);
    if (n !== undefined) s += ' (e' + n + ')';
    return s;
  }

  // Makes the element visible and finds the point an action aims at: the centre of its first
  // box inside the viewport, checked not to be covered by another element.
  function aim(el) {
    const r0 = el.getBoundingClientRect();
    const vw = innerWidth;
    const vh = innerHeight;
    if (r0.top < 0 || r0.left < 0 || r0.bottom > vh || r0.right > vw) {
      el.scrollIntoView({ block: 'center', inline: 'center', behavior: 'instant' });
    }
    const rects = Array.from(el.getClientRects()).filter((r) => r.width > 0 && r.height > 0);
    if (!rects.length) return { error: 'the element has no size on screen (hidden or empty)' };
    const r = rects[0];
    const x = Math.min(Math.max(r.left + r.width / 2, 0), vw - 1);
    const y = Math.min(Math.max(r.top + r.height / 2, 0), vh - 1);
    let hit = document.elementFromPoint(x, y);
    while (hit && hit.shadowRoot) {
      const inner = hit.shadowRoot.elementFromPoint(x, y);
      if (!inner || inner === hit) break;
      hit = inner;
    }
    const inside = hit && (hit === el || el.contains(hit) || (hit.getRootNode() !== document && el.contains(hit.getRootNode().host)));
    // A label covering its control is fine: the click reaches the control.
    const labelled = hit && hit.tagName === 'LABEL' && hit.control === el;
    if (!inside && !labelled) {
      return { error: 'the element is covered by ' + describe(hit) + ' at its centre', covered: true };
    }
    return { x, y };
  }

  // Listens, once, for an event of `type` reaching the element, and reports it through the
  // lomiAck binding with `token`. The returned handler's `reached` says whether it did.
  function listen(el, types, token) {
    const stop = () => {
      for (const t of types.list) removeEventListener(t, handler, true);
    };
    const handler = (event) => {
      const path = event.composedPath();
      if (!event.isTrusted && types.trusted) return;
      if (!path.includes(el)) return;
      stop();
      handler.reached = true;
      globalThis.lomiAck(JSON.stringify({ token, type: event.type }));
    };
    for (const t of types.list) addEventListener(t, handler, true);
    armed.set(token, stop);
    return handler;
  }

  // Guards a click against content that moved between aiming and the press: a press that
  // lands outside the element is stopped here, with its release and click, before the page
  // sees them, and reported as missed (the action aims again). Page listeners on the window's
  // capture phase registered earlier still run first. The content can also move between the
  // press and the release: the browser then gives the click to what the two targets have in
  // common, never to the element; such a release is stopped with its click and reported as
  // `released` (the page saw the press only), and the action aims again too.
  const PRESS = ['pointerdown', 'mousedown'];
  const RELEASE = ['pointerup', 'mouseup'];
  const SWALLOWED = ['pointerdown', 'mousedown', 'pointerup', 'mouseup', 'click', 'auxclick', 'dblclick', 'contextmenu'];
  function guard(el, token, listening) {
    let missed = false;
    let pressed = false;
    const stopListener = armed.get(token);
    const unguard = () => {
      for (const t of SWALLOWED) removeEventListener(t, handler, true);
    };
    const handler = (event) => {
      if (!event.isTrusted) return;
      if (!missed) {
        const onElement = event.composedPath().includes(el);
        if (!pressed) {
          if (!PRESS.includes(event.type)) return;
          if (!onElement) {
            missed = true;
            if (stopListener) stopListener();
            globalThis.lomiAck(JSON.stringify({ token, type: 'missed', hit: describe(event.target) }));
          } else {
            pressed = true;
            return;
          }
        } else {
          if (!RELEASE.includes(event.type)) return;
          // A context menu opens on the press: that event reached the element already.
          if (onElement || listening.reached) {
            unguard();
            return;
          }
          missed = true;
          if (stopListener) stopListener();
          globalThis.lomiAck(JSON.stringify({ token, type: 'released', hit: describe(event.target) }));
        }
      }
      event.preventDefault();
      event.stopImmediatePropagation();
    };
    for (const t of SWALLOWED) addEventListener(t, handler, true);
    armed.set(token, () => {
      if (stopListener) stopListener();
      unguard();
    });
  }

  // One frame later (or 50 ms, where frames are not drawn).
  const nextFrame = () => new Promise((resolve) => {
    requestAnimationFrame(() => resolve());
    setTimeout(resolve, 50);
  });

  // Aims at element n once its box holds still from one frame to the next (a page still
  // inserting content moves it), at most `limit` ms; then the last aim is the answer.
  async function steadyAim(n, limit) {
    const deadline = performance.now() + limit;
    let before = null;
    for (;;) {
      const bad = check(n);
      if (bad) return bad;
      const el = element(n);
      const at = aim(el);
      const r = el.getBoundingClientRect();
      const now = JSON.stringify([at, r.left, r.top, r.width, r.height, scrollX, scrollY]);
      if (now === before) return at;
      if (performance.now() > deadline) {
        if (at.error) at.error += ' (the page was still moving after ' + limit + ' ms)';
        return at;
      }
      before = now;
      await nextFrame();
    }
  }

  function check(n, need) {
    const el = element(n);
    if (!el) return { stale: true };
    if (need === 'select' && el.tagName !== 'SELECT') return { error: describe(el) + ' is not a select element' };
    if (need === 'file' && !(el.tagName === 'INPUT' && el.type === 'file')) {
      return { error: describe(el) + ' is not a file input' };
    }
    return null;
  }

  const api = {
    snap,
    refOf(el) {
      const n = ids.get(el);
      return n === undefined ? null : n;
    },
    // Prepares a pointer action (click, hover) on element n: aim once it holds still, then
    // listen (and guard a click's press).
    async pointer(n, types, token, guarded) {
      const at = await steadyAim(n, 2000);
      if (at.error || at.stale) return at;
      const el = element(n);
      const listening = listen(el, { list: types, trusted: true }, token);
      if (guarded) guard(el, token, listening);
      return { x: at.x, y: at.y, element: describe(el) };
    },
    // Stops an action's listener and guard (after its events were sent).
    disarm(token) {
      const stop = armed.get(token);
      armed.delete(token);
      drags.delete(token);
      if (stop) stop();
      return {};
    },
    // Arms a drag of element src onto element n: reports the drop (or, for pointer-driven
    // dragging, the mouse release) reaching n, or the drag ending at src without a drop, and
    // keeps the dragstart src saw so `dragStarted` can say whether an HTML5 drag began.
    dropWatch(n, src, token) {
      const bad = check(n) || check(src);
      if (bad) return bad;
      const target = element(n);
      const source = element(src);
      const state = { started: null };
      const types = ['drop', 'mouseup', 'dragend'];
      const onStart = (event) => {
        if (event.composedPath().includes(source)) state.started = event;
      };
      const handler = (event) => {
        if (!event.isTrusted) return;
        const path = event.composedPath();
        if (!path.includes(event.type === 'dragend' ? source : target)) return;
        stop();
        globalThis.lomiAck(JSON.stringify({ token, type: event.type }));
      };
      const stop = () => {
        for (const t of types) removeEventListener(t, handler, true);
        removeEventListener('dragstart', onStart, true);
      };
      for (const t of types) addEventListener(t, handler, true);
      addEventListener('dragstart', onStart, true);
      armed.set(token, stop);
      drags.set(token, state);
      return { element: describe(target) };
    },
    // Whether the drag armed under `token` began an HTML5 drag (a dragstart not cancelled).
    dragStarted(token) {
      const state = drags.get(token);
      const event = state && state.started;
      return { started: !!event && !event.defaultPrevented };
    },
    // Where a drag drops on element n, once it holds still.
    async dropPoint(n) {
      return steadyAim(n, 2000);
    },
    // What kind of form field element n is, and its state.
    field(n) {
      const bad = check(n);
      if (bad) return bad;
      const el = element(n);
      let kind = 'other';
      if (el.tagName === 'SELECT') kind = 'select';
      else if (el.tagName === 'TEXTAREA' || el.isContentEditable) kind = 'text';
      else if (el.tagName === 'INPUT') {
        const type = (el.type || 'text').toLowerCase();
        if (type === 'checkbox' || type === 'radio') kind = type;
        else if (!['button', 'submit', 'reset', 'image', 'file', 'hidden', 'range', 'color'].includes(type)) kind = 'text';
      }
      return { kind, checked: !!el.checked, disabled: !!el.disabled, element: describe(el) };
    },
    // What the page sees of its device (after emulation).
    metrics() {
      return {
        innerWidth, innerHeight, devicePixelRatio,
        prefersDark: matchMedia('(prefers-color-scheme: dark)').matches,
        userAgent: navigator.userAgent,
      };
    },
    // The top-left corner of an iframe's content in this frame's viewport.
    frameOrigin(n) {
      const el = element(n);
      if (!el) return { stale: true };
      const r = el.getBoundingClientRect();
      const style = getComputedStyle(el);
      return {
        x: r.left + el.clientLeft + parseFloat(style.paddingLeft),
        y: r.top + el.clientTop + parseFloat(style.paddingTop),
      };
    },
    // Focuses element n for typing; optionally selects its content so typing replaces it.
    focus(n, replace, token) {
      const bad = check(n);
      if (bad) return bad;
      const el = element(n);
      el.scrollIntoView({ block: 'center', inline: 'center', behavior: 'instant' });
      el.focus();
      const active = el.getRootNode().activeElement;
      if (active !== el && !el.contains(active)) return { error: describe(el) + ' cannot take the focus' };
      if (replace) {
        if (el.tagName === 'INPUT' || el.tagName === 'TEXTAREA') el.select();
        else if (el.isContentEditable) {
          const range = document.createRange();
          range.selectNodeContents(el);
          const sel = getSelection();
          sel.removeAllRanges();
          sel.addRange(range);
        }
      } else if (el.tagName === 'INPUT' || el.tagName === 'TEXTAREA') {
        const end = el.value.length;
        try { el.setSelectionRange(end, end); } catch (e) { /* input types without selection */ }
      }
      listen(el, { list: ['input'], trusted: true }, token);
      return { element: describe(el) };
    },
    // Listens for a key event at element n (focusing it) or at the focused element.
    key(n, token) {
      let el;
      if (n) {
        const bad = check(n);
        if (bad) return bad;
        el = element(n);
        el.focus();
      } else {
        el = document.activeElement || document.body;
      }
      listen(el, { list: ['keydown'], trusted: true }, token);
      return { element: describe(el) };
    },
    value(n) {
      const el = element(n);
      if (!el) return { stale: true };
      if (el.tagName === 'INPUT' || el.tagName === 'TEXTAREA') return { value: el.value };
      return { value: textOf(el) };
    },
    // Selects exactly the options whose value or label is in `wanted`, then fires input and
    // change as a person's choice would.
    select(n, wanted) {
      const bad = check(n, 'select');
      if (bad) return bad;
      const el = element(n);
      if (el.disabled) return { error: describe(el) + ' is disabled' };
      const options = Array.from(el.options);
      const chosen = [];
      for (const w of wanted) {
        const o = options.find((o) => o.value === w) || options.find((o) => o.label === w || o.text.trim() === w);
        if (!o) return { error: 'no option ' + JSON.stringify(w) + ' in ' + describe(el) };
        if (o.disabled) return { error: 'option ' + JSON.stringify(w) + ' is disabled' };
        if (!chosen.includes(o)) chosen.push(o);
      }
      if (chosen.length > 1 && !el.multiple) return { error: describe(el) + ' takes one option' };
      for (const o of options) o.selected = chosen.includes(o);
      el.dispatchEvent(new Event('input', { bubbles: true, composed: true }));
      el.dispatchEvent(new Event('change', { bubbles: true }));
      const now = Array.from(el.selectedOptions, (o) => o.value);
      return { selected: now, element: describe(el) };
    },
    // For upload: checks the element and listens for its change event.
    fileInput(n, token) {
      const bad = check(n, 'file');
      if (bad) return bad;
      const el = element(n);
      listen(el, { list: ['change', 'input'], trusted: false }, token);
      return { element: describe(el) };
    },
    files(n) {
      const el = element(n);
      if (!el) return { stale: true };
      return { files: Array.from(el.files || [], (f) => f.name) };
    },
    // Scrolls element n into view; answers where it is afterwards.
    reveal(n) {
      const bad = check(n);
      if (bad) return bad;
      const el = element(n);
      el.scrollIntoView({ block: 'center', inline: 'center', behavior: 'instant' });
      const r = el.getBoundingClientRect();
      const visible = r.bottom > 0 && r.right > 0 && r.top < innerHeight && r.left < innerWidth;
      return { visible, element: describe(el), scrollX, scrollY };
    },
    // Resolves once the document shows what `spec` asks for (text; a role, with a name), as
    // snapshot lines would: checked now and after the DOM changes (at most every 50 ms), never
    // on a timer of its own; { matched: false } after `limit` ms.
    waitFor(spec, limit) {
      const text = spec.text ? spec.text.toLowerCase() : null;
      const name = spec.name ? spec.name.toLowerCase() : null;
      const role = spec.role || null;
      const holds = () => {
        const lines = snap('e').text.split('\n').map((line) => line.trim());
        const hasText = !text || lines.some((line) => line.toLowerCase().includes(text));
        const hasRole = !role || lines.some((line) => {
          if (line !== role && !line.startsWith(role + ' ')) return false;
          if (!name) return true;
          const quoted = line.slice(role.length).match(/^ ("(?:[^"\\]|\\.)*")/);
          return !!quoted && JSON.parse(quoted[1]).toLowerCase().includes(name);
        });
        return hasText && hasRole;
      };
      if (holds()) return { matched: true };
      return new Promise((resolve) => {
        let done = false;
        let scheduled = false;
        const finish = (matched) => {
          if (done) return;
          done = true;
          observer.disconnect();
          clearTimeout(timer);
          resolve({ matched });
        };
        const observer = new MutationObserver(() => {
          if (scheduled || done) return;
          scheduled = true;
          setTimeout(() => {
            scheduled = false;
            if (!done && holds()) finish(true);
          }, 50);
        });
        observer.observe(document, { subtree: true, childList: true, characterData: true, attributes: true });
        const timer = setTimeout(() => finish(holds()), limit);
      });
    },
    // Answers through the binding at once: the acknowledgement follows every event the page
    // sent before it.
    fence(token) {
      globalThis.lomiAck(JSON.stringify({ token, type: 'fence' }));
      return {};
    },
    scrollPosition() {
      return { scrollX, scrollY };
    },
    // Listens for the wheel event at whatever is under the point (for a coordinate scroll).
    listenAt(x, y, types, token) {
      const el = document.elementFromPoint(x, y) || document.documentElement;
      listen(el, { list: types, trusted: true }, token);
      return { element: describe(el) };
    },
    element,
  };
  Object.defineProperty(globalThis, '__lomi', { value: api });
})();
