// Tool-call cards. A card is created when a call opens and updated in place when it changes
// (only what changed: morph), from the card fields (`view`) the server sends with each
// tool-call change and in the chat's state (see server/webui.py: the page never reads the
// agent's wire format itself). Every value is shown as text.
//
// The conversation's log does not read a card out (aria-live off: it read the whole card
// again at each change); the page says its end in one line instead (cardLine, timeline.js).

import { addCardCopyButtons } from "./copy.js";
import { h, morph, formatDuration, lineCount, showControlsDeep, terminalText } from "./dom.js";

const LABELS = {
  shell: "Shell", read: "Read", write: "Write", edit: "Edit", delete: "Delete", ls: "List",
  glob: "Glob", grep: "Grep", sem_search: "Search", todos: "Todos", mcp: "MCP",
  mcp_tools: "MCP tools", web_fetch: "Web fetch", web_search: "Web search",
  ask_question: "Question", create_plan: "Plan", function: "Tool", unknown: "Tool",
};

const STATUS_TEXT = {
  running: "running…", succeeded: "done", failed: "failed", rejected: "rejected",
  denied: "denied", error: "error", timeout: "timed out", abandoned: "abandoned",
};

/** A new, empty card element for a call. */
export function createCard() {
  return h("article", { class: "card", role: "group", "aria-live": "off" });
}

/** What a screen reader hears when a call has ended: "Shell ls: done", "Read a.py: failed",
 * "Shell make: failed (exit 2)"; null while it runs. */
export function cardLine(view, workspace = "") {
  const status = view.status || "running";
  if (status === "running") return null;
  view = showControlsDeep(relativeView(view, workspace));
  const what = headline(view).split("\n")[0];
  const short = what.length > 80 ? `${what.slice(0, 80)}…` : what;
  const exit = view.kind === "shell" && status !== "succeeded" && view.exit_code ? ` (exit ${view.exit_code})` : "";
  return `${[labelOf(view), short].filter(Boolean).join(" ")}: ${STATUS_TEXT[status] || status}${exit}`;
}

function kindOf(view) {
  return LABELS[view.kind] ? view.kind : "unknown";
}

function labelOf(view) {
  const kind = kindOf(view);
  return kind === "unknown" || kind === "function" ? view.name || LABELS[kind]
    : kind === "mcp" && view.own_tool === true ? "Your tool" : LABELS[kind];
}

/** A path as the user thinks of it: relative to the chat's workspace when inside it. */
function relative(path, workspace) {
  if (!path || !workspace) return path || "";
  const root = workspace.replace(/\/+$/, "");
  if (path === root) return ".";
  return path.startsWith(`${root}/`) ? path.slice(root.length + 1) : path;
}

/** The lines of a unified diff, each with its kind: "file" (a file header, "---"/"+++" before
 * the file's hunks), "hunk" ("@@ -1,3 +1,4 @@"), "add", "del" or "ctx". A hunk's lines are
 * counted from its header: inside it, "--- x" is a removed line "-- x", not a header. (A hunk
 * header without counts holds every line after it.) */
function diffLines(diff) {
  let old = 0; // the hunk's lines still to come, old and new side
  let neu = 0;
  return diff.split("\n").map((line) => {
    const c = line[0];
    if (old > 0 || neu > 0) {
      if (c === "-") old--;
      else if (c === "+") neu--;
      else if (c !== "\\") { old--; neu--; } // context ("\ No newline at end of file": none)
      return { line, kind: c === "-" ? "del" : c === "+" ? "add" : "ctx" };
    }
    if (line.startsWith("@@")) {
      const m = line.match(/^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@/);
      old = m ? Number(m[1] ?? 1) : Infinity;
      neu = m ? Number(m[2] ?? 1) : Infinity;
      return { line, kind: "hunk" };
    }
    if (line.startsWith("+++") || line.startsWith("---")) return { line, kind: "file" };
    return { line, kind: c === "+" ? "add" : c === "-" ? "del" : "ctx" };
  });
}

/** A diff's file headers with workspace-relative paths: the agent writes "--- a//abs/path".
 * Only headers (diffLines): a removed or added line stays as it is. */
function relativeDiff(diff, workspace) {
  return diffLines(diff).map(({ line, kind }) => {
    const m = kind === "file" && line.match(/^(---|\+\+\+) (?:([ab])\/)?(\/.*)$/);
    if (!m || m[3] === "/dev/null") return line;
    const rel = relative(m[3], workspace);
    if (rel !== m[3]) return `${m[1]} ${m[2] ? `${m[2]}/` : ""}${rel}`;
    return `${m[1]} ${m[3]}`; // outside the workspace: absolute, without "a/" before the "/"
  }).join("\n");
}

/** The view with every path inside the chat's workspace shown relative to it. */
function relativeView(view, workspace) {
  if (!workspace) return view;
  const v = { ...view };
  if (v.path) v.path = relative(v.path, workspace);
  if (v.summary && v.summary === view.path) v.summary = v.path; // a command stays as written
  if (v.diff) v.diff = relativeDiff(v.diff, workspace);
  if (Array.isArray(v.files)) v.files = v.files.map((f) => relative(f, workspace));
  if (Array.isArray(v.matches)) v.matches = v.matches.map((m) => ({ ...m, file: relative(m.file, workspace) }));
  return v;
}

/** Show `view` in `card`, its copy buttons included, then the nodes `more` (kept as they
 * are: the timeline's "Show all" notes); `workspace` shortens paths. The card is updated in
 * place: the nodes of what did not change are kept (morph), so the focus on one of its
 * buttons stays, and so does a block the reader opened. Bidi controls (U+202E…) in any field
 * are shown as visible markers, never applied. */
export function drawCard(card, view, workspace = "", more = []) {
  view = showControlsDeep(relativeView(view, workspace));
  const kind = kindOf(view);
  const status = view.status || "running";
  card.className = `card tool tool-${kind} status-${status}`;
  card.dataset.kind = kind;
  card.dataset.status = status;
  const label = labelOf(view);
  const summary = headline(view);
  card.setAttribute("aria-label", `${label} ${summary} — ${STATUS_TEXT[status] || status}`);
  const statusText = status === "running" ? STATUS_TEXT.running
    : kind === "shell" && view.exit_code !== null && view.exit_code !== undefined
      ? `${STATUS_TEXT[status] || status} · exit ${view.exit_code}` : STATUS_TEXT[status] || status;
  const fresh = h("div", { dataset: { kind } },
    h("header", { class: "card-head" },
      h("span", { class: "card-kind", text: label }),
      h("code", { class: "card-summary", text: summary }),
      h("span", { class: `card-status status-${status}`, text: statusText }),
      view.duration_ms !== null && view.duration_ms !== undefined && status !== "running"
        ? h("span", { class: "card-duration", text: formatDuration(view.duration_ms) }) : null,
    ),
    body(kind, view, status),
    errorLine(kind, view, status),
    // once the call has ended, its timeline adds "Show all" for each cut field (timeline.js)
    view.cut?.length > 0 && status === "running"
      ? h("p", { class: "card-note", text: "Output cut: Show all comes when the call has ended." }) : null,
  );
  addCardCopyButtons(fresh);
  morph(card, [...fresh.childNodes, more], { held: more.flat(Infinity) });
}

function headline(view) {
  if (view.kind === "shell") return view.command || view.summary || "";
  if (view.kind === "mcp" || view.kind === "mcp_tools") {
    return [view.mcp_server, view.mcp_tool].filter(Boolean).join(" / ") || view.summary || "";
  }
  return view.summary || view.description || "";
}

/** What a shell command printed on its standard output, as the card shows it: `stdout`, else
 * (an agent that gave one interleaved text) `output` of a command that ran (done or failed)
 * when it is not the call's error. A call rejected, denied, timed out or abandoned has for
 * `output` why (the card's error line says it): never shown as if the command printed it. */
function shellStdout(v) {
  if (v.stdout !== null && v.stdout !== undefined) return { text: v.stdout, field: "stdout" };
  const ran = v.status === "succeeded" || v.status === "failed";
  if (v.stderr || !ran || v.output === v.error) return { text: "", field: "stdout" };
  return { text: v.output, field: "output" };
}

/** Why the call did not succeed, in its own line; null when the card says it already (its
 * status, or a shell's stderr). */
function errorLine(kind, v, status) {
  if (!v.error || status === "succeeded" || status === "running") return null;
  if (kind === "shell" && (v.error === v.stderr || v.error === status || v.error === shellStdout(v).text)) return null;
  return h("p", { class: "card-error", text: v.error });
}

function body(kind, v, status) {
  const running = status === "running";
  // cut: only its beginning is here; loaded: Show all brought it whole (timeline.js)
  const cut = (field) => (v.cut || []).includes(field) ? "cut" : (v.loaded || []).includes(field) ? "whole" : "";
  switch (kind) {
    case "shell": {
      const out = shellStdout(v);
      return h("div", { class: "card-body" },
        v.description ? h("p", { class: "card-desc", text: v.description }) : null,
        // as text to read: no colour codes, and each state a "\r" redrew on its own line (none hidden)
        running ? null : output("stdout", terminalText(out.text), true, "", cut(out.field)),
        running || !v.stderr ? null : output("stderr", terminalText(v.stderr), true, "stderr", cut("stderr")),
      );
    }
    case "edit":
    case "write": {
      const diff = v.diff || (v.new_content ? asAdded(v.new_content) : "");
      return h("div", { class: "card-body" },
        diff && !running ? diffView(diff, !v.diff) : null,
        running && v.new_content ? diffView(asAdded(v.new_content), true) : null,
      );
    }
    case "read": {
      const range = v.read_range ? `lines ${v.read_range[0]}–${v.read_range[1]}` : "";
      return h("div", { class: "card-body" },
        range ? h("p", { class: "card-range", text: range }) : null,
        // a failed read's output is why (its error line): not the file's content
        running || status !== "succeeded" ? null : output("content", v.output, false, "", cut("output")),
      );
    }
    case "grep":
      return h("div", { class: "card-body" },
        running ? null : matchList((v.matches || []).map((m) => `${m.file}${m.line ? `:${m.line}` : ""}: ${m.text}`),
          "matches", v.matches_total),
      );
    case "glob":
      return h("div", { class: "card-body" }, running ? null : matchList(v.files || [], "files", v.files_total));
    case "web_fetch":
      return h("div", { class: "card-body" },
        v.url ? h("p", { class: "card-path", text: v.url }) : null,
        running || status !== "succeeded" ? null : output("page", v.output, false, "", cut("output")),
      );
    case "web_search":
      return h("div", { class: "card-body" },
        running ? null : h("ul", { class: "card-list" },
          (v.references || []).map((r) => h("li", {}, h("span", { text: r.title || r.url }), " ", h("code", { text: r.url })))),
      );
    case "mcp":
    case "mcp_tools":
      return h("div", { class: "card-body" },
        h("p", { class: "card-path" }, "server ", h("code", { text: v.mcp_server || "?" }),
          v.mcp_tool ? [" · tool ", h("code", { text: v.mcp_tool })] : null),
        running || status !== "succeeded" ? null : output("output", v.output, true, "", cut("output")),
      );
    case "todos":
      return h("div", { class: "card-body" }, todoList(v.todos || []));
    case "delete":
      return null; // the header says which file; a failure shows its error below
    default:
      return h("div", { class: "card-body" },
        running || status !== "succeeded" ? null : output("output", v.output, true, "", cut("output")),
      );
  }
}

/** A collapsible block of text: open when short, folded when long. `state` "cut": the server
 * cut it (the card's timeline offers Show all): its line count is only the beginning's, and
 * says so ("35,185+ lines"); its Copy says it copied only those (copy.js, data-cut-lines);
 * "whole": Show all loaded it whole. */
function output(label, text, openWhenShort, cls = "", state = "") {
  const cut = state === "cut";
  if (text === null || text === undefined || text === "") {
    return label === "stdout" ? h("p", { class: "card-note", text: "(no output)" }) : null;
  }
  const lines = lineCount(text);
  const count = `${lines.toLocaleString("en")}${cut ? "+" : ""} line${lines === 1 && !cut ? "" : "s"}`;
  return h("details", { class: `card-output ${cls}`, open: openWhenShort && lines <= 12 && !cut },
    h("summary", { text: `${label} (${count})` }),
    h("pre", cut ? { dataset: { cutLines: String(lines) } } : state === "whole" ? { class: "whole-value" } : {},
      h("code", { text })),
  );
}

function asAdded(content) {
  return content.replace(/\n$/, "").split("\n").map((line) => `+${line}`).join("\n");
}

/** A unified diff, one line per element, coloured by its kind (diffLines); `added`: every
 * line is an added one (a written file's content, asAdded: "+++ x" there is a line "++ x"). */
function diffView(diff, added = false) {
  const pre = h("pre", { class: "diff", "aria-label": "diff" });
  const lines = added ? diff.split("\n").map((line) => ({ line, kind: "add" })) : diffLines(diff);
  for (const { line, kind } of lines) {
    pre.append(h("span", { class: `diff-line diff-${kind}`, text: line }), "\n");
  }
  return pre;
}

/** A list of `items`; `total` (if more) is how many there were: the server sends the first
 * 2,000 (the summary says "2,000 of 5,000 files"). */
function matchList(items, noun, total) {
  if (!items.length) return h("p", { class: "card-note", text: `no ${noun}` });
  const count = total > items.length
    ? `${items.length.toLocaleString()} of ${total.toLocaleString()} ${noun} (the first ones only)`
    : `${items.length} ${noun}`;
  return h("details", { class: "card-output", open: items.length <= 12 },
    h("summary", { text: count }),
    h("ul", { class: "card-list" }, items.map((item) => h("li", {}, h("code", { text: item })))),
  );
}

function todoList(todos) {
  if (!todos.length) return h("p", { class: "card-note", text: "no todos" });
  return h("ul", { class: "todos" }, todos.map((t) => {
    const done = /COMPLETED|DONE/i.test(t.status);
    const doing = /IN_PROGRESS/i.test(t.status);
    const state = done ? "done" : doing ? "in progress" : "to do";
    return h("li", { class: `todo todo-${done ? "done" : doing ? "doing" : "todo"}` },
      h("input", { type: "checkbox", checked: done, disabled: true, "aria-label": `${t.content}: ${state}` }),
      h("span", { text: t.content }),
      doing ? h("span", { class: "todo-state", text: " (in progress)" }) : null,
    );
  }));
}
