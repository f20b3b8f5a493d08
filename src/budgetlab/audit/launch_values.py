"""The values launch files give to variables, for reading a worker option named through one (`-P "$POOL"`).

A worker's pool is often chosen by a variable: `--pool="${POOL:-solo}"` in
a script, `ENV POOL=solo` in the Dockerfile, `environment:` in a compose
file, `env:` in a Kubernetes manifest, or `{{ .Values.worker.pool }}` in a
Helm template with the value in values.yaml. The files are read as text
lines, like every launch file; nothing is run or rendered. A variable set in
several places keeps every value, since the audit cannot tell which
deployment sets which.
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_SHELL_ASSIGN = re.compile(rf"^\s*(?:export\s+|local\s+|readonly\s+)?({_NAME})=(\"[^\"]*\"|'[^']*'|[^\s;&|]*)")
_DOCKER = re.compile(r"^\s*(ENV|ARG)\s+(.+)$", re.IGNORECASE)
_DOCKER_PAIR = re.compile(rf"({_NAME})=(\"[^\"]*\"|'[^']*'|\S*)")
_COMPOSE_ITEM = re.compile(rf"^\s*-\s*[\"']?({_NAME})=([^\"'#]*)")
_COMPOSE_KEY = re.compile(r"^\s*([A-Z_][A-Z0-9_]*)\s*:\s*[\"']?([^\"'#\s]+)")
_K8S_NAME = re.compile(rf"^\s*-?\s*name\s*:\s*[\"']?({_NAME})[\"']?\s*$")
_K8S_VALUE = re.compile(r"^\s*value\s*:\s*[\"']?([^\"'#\s]+)")
_UNIT_ENV = re.compile(rf"^\s*Environment\s*=\s*\"?({_NAME})=([^\"\s]*)")
# ${VAR}, ${VAR:-default}, ${VAR-default}, ${VAR:=default}, $VAR and Kubernetes' $(VAR).
_REFERENCE = re.compile(rf"^\$(?:\{{({_NAME})(?::?[-=]([^}}]*))?\}}|({_NAME})|\(({_NAME})\))$")
_HELM = re.compile(r"^\{\{-?\s*\.Values\.([\w.]+)\s*(?:\|\s*default\s+[\"']?([\w-]+)[\"']?\s*)?-?\}\}$")
_YAML_KEY = re.compile(r"^(\s*)([\w-]+)\s*:\s*(.*?)\s*(?:#.*)?$")


class LaunchValues:
    """Variables and Helm values gathered from every launch file of one audit."""

    def __init__(self) -> None:
        self.variables: dict[str, list[tuple[str, str]]] = defaultdict(list)
        self.helm: dict[str, list[tuple[str, str]]] = defaultdict(list)

    def read(self, display: str, text: str, kind: str) -> None:
        """Note the values one launch file sets, each with "file:line" for the message."""
        name = Path(display).name
        lines = text.splitlines()
        if kind == "yaml" and name.lower().startswith("values"):
            self._helm_values(name, lines)
        for number, line in enumerate(lines, start=1):
            where = f"{name}:{number}"
            for variable, value in self._assignments(kind, line, lines, number):
                self.variables[variable].append((value.strip("\"'"), where))

    def _assignments(self, kind: str, line: str, lines: list[str], number: int):
        if kind == "shell":
            docker = _DOCKER.match(line)
            if docker:
                rest = docker.group(2).strip()
                pairs = _DOCKER_PAIR.findall(rest)
                if pairs:
                    yield from pairs
                elif docker.group(1).upper() == "ENV" and len(rest.split(None, 1)) == 2:
                    yield tuple(rest.split(None, 1))  # the old `ENV NAME value` form
                return
            match = _SHELL_ASSIGN.match(line)
            if match:
                yield match.group(1), match.group(2)
        elif kind == "yaml":
            for pattern in (_COMPOSE_ITEM, _COMPOSE_KEY):
                match = pattern.match(line)
                if match:
                    yield match.group(1), match.group(2).strip()
                    return
            match = _K8S_NAME.match(line)
            if match and number < len(lines):
                value = _K8S_VALUE.match(lines[number])
                if value:
                    yield match.group(1), value.group(1)
        elif kind == "keyvalue":
            match = _UNIT_ENV.match(line)
            if match:
                yield match.group(1), match.group(2)

    def _helm_values(self, name: str, lines: list[str]) -> None:
        """Dotted keys of a values.yaml's scalar leaves: `worker.pool` for worker: / pool: gevent."""
        path: list[tuple[int, str]] = []
        for number, line in enumerate(lines, start=1):
            match = _YAML_KEY.match(line)
            if not match or line.lstrip().startswith("#"):
                continue
            indent, key, value = len(match.group(1)), match.group(2), match.group(3)
            while path and path[-1][0] >= indent:
                path.pop()
            if value:
                self.helm[".".join([*(k for _, k in path), key])].append((value.strip("\"'"), f"{name}:{number}"))
            else:
                path.append((indent, key))

    def resolve(self, word: str) -> list[tuple[str, str | None]]:
        """The values a pool word may take, each with where it was set (None for a literal)."""
        reference = _REFERENCE.match(word)
        if reference:
            braced, default, bare, kubernetes = reference.groups()
            variable = braced or bare or kubernetes
            known = self.variables.get(variable)
            if known:
                return [(value, f"{variable} set at {where}") for value, where in known]
            if default:
                return [(default, f"the default of {word}")]
            return []
        helm = _HELM.match(word)
        if helm:
            known = self.helm.get(helm.group(1))
            if known:
                return [(value, f".Values.{helm.group(1)} at {where}") for value, where in known]
            return [(helm.group(2), f"the default of {word}")] if helm.group(2) else []
        return [(word, None)]
