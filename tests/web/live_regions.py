"""What the page sends a screen reader from its live regions, as the tests model it.

Each node added (or text changed) inside a live region — the nearest ancestor with
`aria-live` or role log / status / alert — is one announcement, read as its text; nothing
is announced inside `aria-live="off"` or while an ancestor is `aria-busy="true"`, and an
attribute change (clearing aria-busy) announces nothing: what NVDA does
(nvaccess/nvda#20871). A live region (other than an alert) added with its content is not
announced by itself, only by a live region around it; what changes in it later is. Install with
`record(page)`, before the changes to watch."""

from __future__ import annotations

from typing import Any

RECORDER = r"""
window.__announced = [];
const isRegion = (e) => e.nodeType === 1 && e.getAttribute('aria-live') !== 'off'
  && (e.hasAttribute('aria-live') || ['log', 'status'].includes(e.getAttribute('role')));
const regionOf = (node) => {
  if (isRegion(node)) node = node.parentElement; // a region arriving with its content: only a
  if (!node) return null;                        // region around it can announce it
  let busy = false;
  for (let e = node.nodeType === 1 ? node : node.parentElement; e; e = e.parentElement) {
    if (e.getAttribute('aria-busy') === 'true') busy = true;
    const live = e.getAttribute('aria-live'); const role = e.getAttribute('role');
    if (live === 'off') return null;
    if (live || role === 'log' || role === 'status' || role === 'alert') return busy ? null : (e.id || role);
  }
  return null;
};
new MutationObserver((records) => { for (const m of records) {
  const nodes = m.type === 'characterData' ? [m.target] : [...m.addedNodes];
  for (const n of nodes) {
    const region = regionOf(n); const text = (n.textContent || '').trim();
    if (region && text) window.__announced.push([region, text]);
  }
} }).observe(document.documentElement, {subtree: true, childList: true, characterData: true});
"""


def record(page: Any) -> None:
    """Start recording (and forget what was recorded so far)."""
    page.evaluate(RECORDER)


def announced(page: Any, region: str | None = None) -> list[str]:
    """The texts announced since `record`, of `region` (an element id or role) or of all."""
    return [text for where, text in page.evaluate("window.__announced") if region in (None, where)]


def announced_by_region(page: Any) -> list[tuple[str, str]]:
    """Each announcement since `record` as (region, text)."""
    return [(where, text) for where, text in page.evaluate("window.__announced")]
