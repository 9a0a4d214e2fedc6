"""The page's Markdown renderer (js/markdown.js) in the browser: what it renders, and that
agent text can never become markup, script or a dangerous link."""

from __future__ import annotations

from typing import Any

import pytest

RENDER = """async (src) => {
  const { renderMarkdown } = await import('/js/markdown.js');
  const div = document.createElement('div');
  div.append(renderMarkdown(src));
  return div.innerHTML;  // read back for the assertion only
}"""

CASES = [
    ("Hello **bold** and *em* and `x < y`",
     "<p>Hello <strong>bold</strong> and <em>em</em> and <code>x &lt; y</code></p>"),
    ("# Title\n\n- one\n- two\n\n1. a\n2. b",
     "<h3>Title</h3><ul><li>one</li><li>two</li></ul><ol><li>a</li><li>b</li></ol>"),
    ("```py\nprint('<b>')\n```",
     '<pre class="md-code"><code data-lang="py">print(\'&lt;b&gt;\')</code></pre>'),
    ("> quoted", "<blockquote><p>quoted</p></blockquote>"),
    ("[docs](https://example.com/a?b=1)",
     '<p><a href="https://example.com/a?b=1" target="_blank" rel="noopener noreferrer">docs</a></p>'),
    ("[click](javascript:alert(1))", "<p>[click](javascript:alert(1))</p>"),
    ("<script>window.__pwned=1</script>", "<p>&lt;script&gt;window.__pwned=1&lt;/script&gt;</p>"),
    ('<img src=x onerror="window.__pwned=1">',
     '<p>&lt;img src=x onerror="window.__pwned=1"&gt;</p>'),
    ("line one\nline two", "<p>line one<br>line two</p>"),
    ("```\nunfinished, still streaming",
     '<pre class="md-code"><code>unfinished, still streaming</code></pre>'),
    # Bidi controls in code (commands, file names) are shown, not applied (issue 11, point 7).
    ("run `cat 'a\u202etxt.sh'`\n\n```\nrm \u2066x\u2069\n```",
     "<p>run <code>cat 'a⟨U+202E⟩txt.sh'</code></p>"
     '<pre class="md-code"><code>rm ⟨U+2066⟩x⟨U+2069⟩</code></pre>'),
]


@pytest.fixture
def page(make_server: Any, browser: Any) -> Any:
    server = make_server()
    page = browser.new_page()
    page.goto(f"{server.url}/?token={server.token}")
    return page


def test_markdown_renders_safely(page: Any) -> None:
    for src, html in CASES:
        assert page.evaluate(RENDER, src) == html, src
    assert page.evaluate("window.__pwned") is None
