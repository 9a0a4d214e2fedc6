"""The simple commands of a shell command line, as the ``Shell(…)`` permission rules see them.

``split_commands("ls -la && rm -rf x")`` is ``ls -la`` and ``rm -rf x``: the line, its line
continuations joined as bash joins them, is split at
``;``, ``&``, ``&&``, ``||``, ``|``, ``|&``, newlines, parentheses and braces; each simple
command keeps apart its leading ``VAR=value`` words, its redirections and its words. A line
with a command or process substitution (``$(…)``, backticks, ``<(…)``, ``>(…)``,
``${ …; }``), with ``$'…'`` quoting or a comment, or that does not tokenise (an open quote)
gives ``None``: the rules cannot judge it.

The standard library's :mod:`shlex` does the quoting (bashlex, a full parser, is GPL). It
cannot tell a quoted ``';'`` from an operator, so it splits where the shell would not: every
such error makes a rule stricter (an allow rule must cover one more part, a deny rule sees one
more command), never looser.
"""

from __future__ import annotations

import functools
import posixpath
import re
import shlex
from dataclasses import dataclass

__all__ = ["SimpleCommand", "possible_command_words", "split_commands"]

_PUNCTUATION = "();<>|&\n"
_OPERATORS = sorted(["&&", "||", "|&", ";;&", ";;", ";&", ">>", ">&", "<&", "&>>", "&>", "<<<",
                     "<<", "<>", ">|", *_PUNCTUATION], key=len, reverse=True)
_SEPARATORS = frozenset({";", "&", "&&", "||", "|", "|&", "\n", "(", ")", ";;", ";&", ";;&"})
# $(…), `…`, <(…), >(…), and bash 5.3's ${ …; } and ${|…;}
_SUBSTITUTION = re.compile(r"\$\(|`|[<>]\(|\$\{[\s|]")
# words the shell reads before a command's name: `! ls`, `if ls`, `then ls`, `time ls`…
_RESERVED = frozenset({"!", "if", "then", "else", "elif", "fi", "do", "done", "while", "until",
                       "time", "coproc"})
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\[[^]]*\])?\+?=")
_NOT_LITERAL = re.compile(r"[$`*?\[{\\]")  # expansions and globs: the name is not known
# commands that run another command given in their arguments, as words or as a script
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish"})
_RUNNERS = _SHELLS | {"exec", "command", "builtin", "eval", "sudo", "doas", "env", "nohup", "nice",
                      "ionice", "timeout", "xargs", "stdbuf", "setsid", "watch", "strace",
                      "busybox"}
_FD_DUP = frozenset({">&", "<&"})
_HERE = frozenset({"<<", "<<<"})
_CRUDE = re.compile(r"[\s;&|()<>`$\"'\\{}=,]+")


@dataclass(frozen=True, slots=True)
class SimpleCommand:
    """One simple command: its leading ``VAR=value`` words, its words (``argv``: the
    command's name first) and its redirections (``(operator, target)``, the operator with
    its file descriptor: ``("2>", "/dev/null")``)."""

    argv: tuple[str, ...]
    assignments: tuple[str, ...] = ()
    redirects: tuple[tuple[str, str], ...] = ()

    @property
    def name_known(self) -> bool:
        """Whether the command's name is plain text (no ``$``, glob or brace to expand).

        Example:
            >>> SimpleCommand(("ls",)).name_known, SimpleCommand(("$X",)).name_known
            (True, False)
        """
        return bool(self.argv) and (self.argv[0] in ("[", "[[")
                                    or _NOT_LITERAL.search(self.argv[0]) is None)

    @property
    def runs_others(self) -> bool:
        """Whether it runs a command found in its arguments (``sudo rm``, ``xargs rm``,
        ``sh -c 'rm x'``, ``eval``): a wrapper or a shell; known by name, far from all.

        Example:
            >>> [c.runs_others for c in split_commands("sudo rm x; /bin/sh -c x; ls") or ()]
            [True, True, False]
        """
        return bool(self.argv) and posixpath.basename(self.argv[0]) in _RUNNERS

    @property
    def runs_unseen(self) -> bool:
        """Whether it is a shell given no ``-c`` script: it runs commands from its input or a
        file (``… | bash``, ``bash <<< 'rm x'``, ``sh cleanup.sh``), which no rule can read.

        Example:
            >>> [c.runs_unseen for c in split_commands("echo x | bash; sh -ec 'ls'; ls") or ()]
            [False, True, False, False]
        """
        return (bool(self.argv) and posixpath.basename(self.argv[0]) in _SHELLS
                and not any(w.startswith("-") and not w.startswith("--") and "c" in w
                            for w in self.argv[1:]))

    @property
    def harmless(self) -> bool:
        """No ``VAR=value`` before it, a known name, and no redirection but ``2>&1``-style
        descriptor copies (``>&-`` closes) and ``/dev/null`` (in or out).

        Example:
            >>> [c.harmless for c in split_commands("ls 2>&1 >/dev/null; ls >f; X=1 ls") or ()]
            [True, False, False]
        """
        if self.assignments or (self.argv and not self.name_known):
            return False
        for op, target in self.redirects:
            bare = op.lstrip("0123456789")
            if bare in _FD_DUP and (target.isdigit() or target == "-"):
                continue
            if target == "/dev/null" and bare not in _HERE and bare not in _FD_DUP:
                continue
            return False
        return True


@functools.lru_cache(maxsize=256)  # each rule reads the same line again
def split_commands(command: str) -> tuple[SimpleCommand, ...] | None:
    """The simple commands of ``command``, or ``None`` when it cannot be judged
    (substitutions, ``$'…'``, a comment, open quotes, a redirection with no target).

    Example:
        >>> [c.argv for c in split_commands("ls -la && rm -rf 'my dir'\\n(cd x; make)") or ()]
        [('ls', '-la'), ('rm', '-rf', 'my dir'), ('cd', 'x'), ('make',)]
        >>> split_commands("PATH=/tmp/x ls 2>/dev/null")
        (SimpleCommand(argv=('ls',), assignments=('PATH=/tmp/x',), redirects=(('2>', '/dev/null'),)),)
        >>> split_commands("ls $(rm -rf x)") is None, split_commands("ls 'open") is None
        (True, True)
    """
    # bash removes a line continuation (backslash, newline) before it reads the line, so it
    # may complete a "$(" or a "$'" (in single quotes bash keeps it: judging the line joined
    # there only makes a word shorter, never a quote or a separator)
    command = command.replace("\\\n", "")
    if _SUBSTITUTION.search(command) or "$'" in command:  # shlex does not read $'…' quoting
        return None
    tokens = _tokens(command, commenters="")
    # shlex takes a "#" inside a word for a comment, the shell does not: a line where a
    # comment changes anything (it may hide an open quote from the shell) is not judged
    if tokens is None or tokens != _tokens(command, commenters="#"):
        return None
    commands: list[SimpleCommand] = []
    words: list[str] = []
    redirects: list[tuple[str, str]] = []
    pending: str | None = None  # a redirection operator waiting for its target

    def close() -> None:
        at = 0
        while at < len(words) and words[at] in _RESERVED:
            at += 1
            if words[at - 1] == "time":  # its own options: `time -p -- rm x`
                while at < len(words) and words[at] in ("-p", "--"):
                    at += 1
        first = at
        while at < len(words) and _ASSIGNMENT.match(words[at]):
            at += 1
        if at > first or at < len(words) or redirects:
            commands.append(SimpleCommand(tuple(words[at:]), tuple(words[first:at]), tuple(redirects)))
        words.clear()
        redirects.clear()

    for token in tokens:
        if token and all(c in _PUNCTUATION for c in token):
            while token:
                op = next(o for o in _OPERATORS if token.startswith(o))
                token = token[len(op):]
                if pending is not None:
                    return None
                if op in _SEPARATORS:
                    close()
                else:
                    pending = (words.pop() if words and words[-1].isdigit() else "") + op
        elif pending is not None:
            redirects.append((pending, token))
            pending = None
        elif token in ("{", "}"):
            close()
        else:
            words.append(token)
    if pending is not None:
        return None
    close()
    return tuple(commands)


def _tokens(command: str, *, commenters: str) -> list[str] | None:
    lexer = shlex.shlex(command, posix=True, punctuation_chars=_PUNCTUATION)
    lexer.whitespace = " \t"  # a newline separates commands; "\r" is part of a word, as in bash
    lexer.whitespace_split = True
    lexer.commenters = commenters
    try:
        return list(lexer)
    except ValueError:  # an open quote, a backslash at the end
        return None


def possible_command_words(command: str) -> list[str]:
    """Every word of a line :func:`split_commands` could not split, cut at any shell
    character: what a deny rule looks at, erring on the side of matching.

    Example:
        >>> possible_command_words('echo "$(X=/bin/rm; $X -rf a)"')
        ['echo', 'X', '/bin/rm', 'rm', 'X', '-rf', 'a']
    """
    words: list[str] = []
    for word in _CRUDE.split(command.replace("\\\n", "")):  # joined as bash joins it
        if word:
            words.append(word)
            base = posixpath.basename(word)
            if base and base != word:
                words.append(base)
    return words
