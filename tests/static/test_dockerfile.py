"""The Dockerfile builds lean, unprivileged images, checked statically (no Docker here).

The Dockerfile is parsed into stages; a final image's stage is followed through its
``FROM`` chain, since whatever an ancestor stage installs ends up in the image. The
stages it only copies from (``COPY --from``) are build stages and may hold compilers.
"""

from __future__ import annotations

import json
import re
import shlex
import tomllib
from dataclasses import dataclass, field
from fnmatch import fnmatch
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.dockerfiles import COMPILERS, logical_lines

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "Dockerfile"
DOCKERIGNORE = ROOT / ".dockerignore"
K8S_BASE = ROOT / "deploy" / "k8s" / "base"

FINAL_STAGES = {"runtime": "grove-api", "ask": "grove-ask"}
# The image name the Kubernetes manifests give each final stage.
IMAGES = {"runtime": "grove", "ask": "grove-ask"}
VENV = "/opt/venv"
INFERENCE = re.compile(r"""["']?\.\[inference\]["']?""")
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
MUST_IGNORE = (".venv", ".git", ".grove", "tests", "**/__pycache__")


@dataclass
class Stage:
    name: str
    base: str
    instructions: list[tuple[str, str]] = field(default_factory=list)

    def all(self, keyword: str) -> list[str]:
        return [arguments for kw, arguments in self.instructions if kw == keyword]


@cache
def parse() -> tuple[dict[str, str], dict[str, Stage]]:
    """Global ARG defaults, and the stages by name (in file order)."""
    args: dict[str, str] = {}
    stages: dict[str, Stage] = {}
    stage: Stage | None = None
    for line in logical_lines(DOCKERFILE.read_text(encoding="utf-8")):
        keyword, _, arguments = line.partition(" ")
        keyword = keyword.upper()
        if keyword == "FROM":
            words = [w for w in arguments.split() if not w.startswith("--")]
            assert len(words) == 3 and words[1].upper() == "AS", f"unnamed stage: {line}"
            stage = Stage(name=words[2], base=words[0])
            assert stage.name not in stages, f"stage {stage.name} defined twice"
            stages[stage.name] = stage
        elif stage is None:
            if keyword == "ARG":
                name, _, default = arguments.partition("=")
                args[name.strip()] = default.strip()
        else:
            stage.instructions.append((keyword, arguments.strip()))
    return args, stages


def stages() -> dict[str, Stage]:
    return parse()[1]


def chain(name: str) -> list[Stage]:
    """A stage and every stage it is built ``FROM``, nearest first."""
    found = []
    current: str | None = name
    while current in stages():
        found.append(stages()[current])
        current = stages()[current].base
    return found


def external_base(name: str) -> str:
    """The registry image a stage's chain starts from, with ARG defaults substituted."""
    base = chain(name)[-1].base
    return re.sub(r"\$\{?(\w+)\}?", lambda m: parse()[0].get(m.group(1), m.group(0)), base)


def copied_from(name: str) -> dict[str, list[str]]:
    """Stages the chain copies from, with the source paths copied."""
    sources: dict[str, list[str]] = {}
    for stage in chain(name):
        for arguments in stage.all("COPY"):
            words = shlex.split(arguments)
            origin = [w.split("=", 1)[1] for w in words if w.startswith("--from=")]
            if origin:
                paths = [w for w in words if not w.startswith("--")][:-1]
                sources.setdefault(origin[0], []).extend(paths)
    return sources


def runs(stage_names: list[str]) -> str:
    return "\n".join(r for name in stage_names for s in chain(name) for r in s.all("RUN"))


def default_command(name: str) -> list[str]:
    for stage in chain(name):
        for keyword in ("ENTRYPOINT", "CMD"):
            found = stage.all(keyword)
            if found:
                value: list[str] = json.loads(found[-1])  # exec form only
                return value
    return []


@cache
def console_scripts() -> frozenset[str]:
    with (ROOT / "pyproject.toml").open("rb") as handle:
        return frozenset(tomllib.load(handle)["project"]["scripts"])


def k8s_run_as_users() -> set[int]:
    """Every runAsUser in the Kubernetes base manifests (read as files, no kustomize)."""
    found: set[int] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "runAsUser":
                    found.add(int(value))
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    for path in sorted(K8S_BASE.glob("*.yaml")):
        for document in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            walk(document)
    return found


def k8s_container_ports() -> dict[str, set[int]]:
    """Container ports of the base Deployments, by image (``grove``, ``grove-ask``)."""
    ports: dict[str, set[int]] = {}
    for path in sorted(K8S_BASE.glob("*.yaml")):
        for document in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if not document or document.get("kind") != "Deployment":
                continue
            for container in document["spec"]["template"]["spec"]["containers"]:
                found = {port["containerPort"] for port in container.get("ports", [])}
                ports.setdefault(container["image"], set()).update(found)
    return ports


def exposed_ports(name: str) -> set[int]:
    return {
        int(word.split("/")[0])
        for stage in chain(name)
        for arguments in stage.all("EXPOSE")
        for word in arguments.split()
    }


# --- tests ----------------------------------------------------------------------------


def test_every_stage_is_named_and_both_final_targets_exist() -> None:
    assert set(FINAL_STAGES) <= set(stages())
    assert list(stages())[-1] == "runtime", "a plain `docker build .` builds the runtime"


@pytest.mark.parametrize("name", sorted(FINAL_STAGES))
def test_final_stage_starts_from_slim_python(name: str) -> None:
    image = external_base(name)
    assert re.fullmatch(r"python:3\.1[1-9]-slim(-\w+)?", image), image


@pytest.mark.parametrize("name", sorted(FINAL_STAGES))
def test_final_stage_installs_no_compiler_and_copies_only_the_venv(name: str) -> None:
    assert not COMPILERS.search(runs([name])), f"{name} installs a compiler"
    for stage in chain(name):
        assert not stage.all("ADD"), f"{stage.name}: ADD brings in unreviewed content"
        for arguments in stage.all("COPY"):
            assert "--from=" in arguments, f"{stage.name} copies sources: {arguments}"
    sources = copied_from(name)
    assert sources and all(paths == [VENV] for paths in sources.values()), sources


def test_build_stages_install_the_package_from_source_not_editable() -> None:
    builders = {origin for name in FINAL_STAGES for origin in copied_from(name)}
    text = runs(sorted(builders))
    assert re.search(r"pip install[^\n&|;]*\s\.(\s|$)", text), "no `pip install .`"
    assert not re.search(r"pip install[^\n&|;]*\s(-e|--editable)\s", text)
    for source in re.findall(r"^COPY\s+(?!--)(\S+)", DOCKERFILE.read_text(), re.MULTILINE):
        assert (ROOT / source).exists(), f"COPY {source}: not in the repository"


def test_ask_installs_the_inference_extra_from_the_cpu_index() -> None:
    (builder,) = copied_from("ask")
    text = runs([builder])
    assert INFERENCE.search(text), "the ask image lacks [inference]"
    # Without the CPU index pip takes PyPI's CUDA build of torch (gigabytes more).
    arg_defaults = " ".join(a for stage in chain(builder) for a in stage.all("ARG"))
    assert "--extra-index-url" in text
    assert TORCH_CPU_INDEX in text + arg_defaults


def test_runtime_image_leaves_torch_out() -> None:
    (builder,) = copied_from("runtime")
    assert not INFERENCE.search(runs([builder])), "runtime would carry torch"


@pytest.mark.parametrize("name", sorted(FINAL_STAGES))
def test_images_leave_the_embedded_postgresql_out(name: str) -> None:
    # It is the `embedded` extra (make dev, make test); an image connects to its own.
    (builder,) = copied_from(name)
    installs = re.findall(r"pip install[^\n&|;]*", runs([builder]))
    assert installs and not [i for i in installs if "embedded" in i], installs


@pytest.mark.parametrize("name", sorted(FINAL_STAGES))
def test_final_stage_runs_as_the_numeric_non_root_user_kubernetes_expects(name: str) -> None:
    users = [u for stage in reversed(chain(name)) for u in stage.all("USER")]
    assert users, f"{name} runs as root"
    uid = users[-1].split(":")[0]
    assert uid.isdigit() and int(uid) >= 1000, f"{name}: USER {users[-1]}"
    # runAsNonRoot can only verify a numeric user; the manifests must agree on it.
    assert k8s_run_as_users() == {int(uid)}


@pytest.mark.parametrize("name", sorted(FINAL_STAGES))
def test_final_stage_puts_the_venv_on_path(name: str) -> None:
    envs = " ".join(e for stage in chain(name) for e in stage.all("ENV"))
    assert re.search(rf"PATH={re.escape(VENV)}/bin:", envs), envs


@pytest.mark.parametrize(("name", "script"), sorted(FINAL_STAGES.items()))
def test_default_command_is_a_console_script(name: str, script: str) -> None:
    command = default_command(name)
    assert command == [script]
    assert command[0] in console_scripts()


@pytest.mark.parametrize(("name", "image"), sorted(IMAGES.items()))
def test_final_stage_exposes_the_ports_of_the_services_it_runs(name: str, image: str) -> None:
    # Service and metrics ports of every Deployment on this image (runtime: api, mcp,
    # share and worker), so `docker run -P` and the manifests agree.
    assert exposed_ports(name) == k8s_container_ports()[image]


def ignore_patterns() -> list[str]:
    lines = DOCKERIGNORE.read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def test_dockerignore_keeps_local_state_out_of_the_context() -> None:
    patterns = ignore_patterns()
    for path in MUST_IGNORE:
        assert path in patterns, f".dockerignore must exclude {path}"


def test_dockerignore_keeps_what_the_build_copies() -> None:
    patterns = [p for p in ignore_patterns() if not p.startswith("!")]
    copied = re.findall(r"^COPY\s+(?!--)(\S+)", DOCKERFILE.read_text(), re.MULTILINE)
    assert copied
    for source in copied:
        hit = [p for p in patterns if fnmatch(source.rstrip("/"), p.rstrip("/"))]
        assert not hit, f"COPY {source} is excluded by {hit}"
