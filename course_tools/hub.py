"""A class on a real JupyterHub, on this machine: the hub test and ``./course.sh bench``.

:class:`LocalHub` starts JupyterHub (from PyPI, with configurable-http-proxy from npm)
on 127.0.0.1, as Zero to JupyterHub would run the course's image
(:mod:`course_tools.hub_image`): a dummy authenticator, a local spawner that runs
``binder/start jupyterhub-singleuser`` from the image's environment, and for every
learner an empty home folder where the image's home would be (the persistent volume),
which is also the server's root folder (``singleuser.notebookDir``).

:class:`Learner` does what a learner's browser does, through the hub's and the
server's REST APIs: logs in (a token from the learner's name and password), starts
the server, follows the guide's nbgitpuller link (the link's page, then the event
stream its script reads while git pulls), opens notebooks (a session, as JupyterLab
makes one) and runs them top to bottom over the kernel's websocket, saves edits
through the contents API, and reads the peak memory of its server and kernels.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import signal
import socket
import subprocess
import time
import uuid
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from urllib.parse import quote
from urllib.parse import urlencode
from urllib.request import urlopen

from .benchmark_memory import peak_resident_mb
from .hub_image import Image

PASSWORD = "same-for-everyone"  # the dummy authenticator's one password
# As patient as a learner: tornado's default 20 s would end a kernel's websocket
# handshake that a class on two cores delays longer, and call it the hub's failure.
PATIENT = {"connect_timeout": 600, "request_timeout": 600}


def http_client():
    """The event loop's HTTP client, with room for a whole class's requests at once
    (tornado's default is 10: twenty browsers would not queue behind each other)."""
    from tornado.httpclient import AsyncHTTPClient

    return AsyncHTTPClient(max_clients=100)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def processes_of(user: str) -> dict[str, list[int]]:
    """The pids of ``user``'s single-user server and of its kernels, found by the
    ``JUPYTERHUB_USER`` every one of them inherits."""
    found: dict[str, list[int]] = {"server": [], "kernels": []}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes().split(b"\0")
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if f"JUPYTERHUB_USER={user}".encode() not in environ:
            continue
        if "ipykernel_launcher" in command:
            found["kernels"].append(int(entry.name))
        elif "jupyterhub-singleuser" in command:
            found["server"].append(int(entry.name))
    return found


CONFIG = """\
import os

c = get_config()  # noqa: F821
c.JupyterHub.bind_url = "http://127.0.0.1:{port}"
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = {hub_port}
c.ConfigurableHTTPProxy.command = [{proxy!r}]
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{proxy_port}"
c.JupyterHub.db_url = "sqlite:///{folder}/jupyterhub.sqlite"
c.JupyterHub.cookie_secret_file = "{folder}/jupyterhub_cookie_secret"
c.JupyterHub.pid_file = "{folder}/jupyterhub.pid"
c.JupyterHub.log_level = "WARN"
c.JupyterHub.authenticator_class = "dummy"
c.DummyAuthenticator.password = {password!r}
c.Authenticator.allow_all = True
c.JupyterHub.spawner_class = "simple"
# Each learner's home: the persistent volume, empty the first time, where the image's
# home is; the server's root folder too (Zero to JupyterHub's singleuser.notebookDir).
c.SimpleLocalProcessSpawner.home_dir_template = "{homes}/{{username}}"
c.Spawner.notebook_dir = "{homes}/{{username}}"
# The image's entry point and command.
c.Spawner.cmd = [{start!r}, {singleuser!r}]
c.Spawner.args = {arguments!r}
c.Spawner.default_url = "/lab"
c.Spawner.environment = {environment!r}
c.Spawner.start_timeout = 600
c.Spawner.http_timeout = 600
c.JupyterHub.concurrent_spawn_limit = 0
c.JupyterHub.services = [{{"name": "instructor", "api_token": {token!r}}}]
c.JupyterHub.load_roles = [
    {{
        "name": "instructor",
        "scopes": ["admin:users", "admin:servers", "tokens", "list:users"],
        "services": ["instructor"],
    }}
]
"""


class LocalHub:
    """JupyterHub with the stand-in image, on 127.0.0.1 (use it as a context manager)."""

    def __init__(self, image: Image, folder: Path):
        self.image = image
        self.folder = Path(folder)
        self.homes = self.folder / "homes"
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.token = secrets.token_hex(16)
        self.process: subprocess.Popen | None = None

    def config(self) -> str:
        arguments = ["--ServerApp.allow_root=True"] if os.getuid() == 0 else []
        environment = {
            "PATH": self.image.environment()["PATH"],
            # TensorFlow as quiet as binder/start makes it (it also sets these).
            "PYTHONUNBUFFERED": "1",
        }
        return CONFIG.format(
            port=self.port,
            hub_port=free_port(),
            proxy=str(self.image.proxy),
            proxy_port=free_port(),
            folder=self.folder,
            password=PASSWORD,
            homes=self.homes,
            start=str(self.image.repo / "binder" / "start"),
            singleuser=str(self.image.bin / "jupyterhub-singleuser"),
            arguments=arguments,
            environment=environment,
            token=self.token,
        )

    def start(self, timeout: float = 120) -> LocalHub:
        self.folder.mkdir(parents=True, exist_ok=True)
        self.homes.mkdir(exist_ok=True)
        (self.folder / "jupyterhub_config.py").write_text(self.config())
        environment = self.image.environment()
        environment["HOME"] = str(self.folder)
        self.log = open(self.folder / "jupyterhub.log", "wb")
        self.process = subprocess.Popen(
            [str(self.image.bin / "jupyterhub"), "-f", "jupyterhub_config.py"],
            cwd=self.folder,
            env=environment,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"JupyterHub stopped at once:\n{self.log_tail()}")
            try:
                with urlopen(f"{self.url}/hub/api/", timeout=5) as answer:
                    if json.loads(answer.read())["version"]:
                        return self
            except (OSError, ValueError, KeyError):
                time.sleep(0.5)
        raise RuntimeError(f"JupyterHub did not answer within {timeout:g} s:\n{self.log_tail()}")

    def log_tail(self, size: int = 4000) -> str:
        try:
            return (self.folder / "jupyterhub.log").read_bytes()[-size:].decode("utf-8", "replace")
        except OSError:
            return ""

    def stop(self) -> None:
        """Stop the hub, the proxy and every learner's server and kernels."""
        if self.process is None:
            return
        try:
            os.killpg(self.process.pid, signal.SIGTERM)  # the hub stops the servers it spawned
            self.process.wait(timeout=60)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            pass
        for learner in self.homes.iterdir() if self.homes.exists() else []:
            for pids in processes_of(learner.name).values():
                for pid in pids:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait()
        self.log.close()
        self.process = None

    def __enter__(self) -> LocalHub:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    async def api(self, method: str, path: str, body=None, token: str | None = None, **extra):
        """A JSON request to the hub (the instructor's token unless another is given)."""
        from tornado.httpclient import HTTPClientError

        try:
            response = await http_client().fetch(
                self.url + path,
                method=method,
                headers={"Authorization": f"token {token or self.token}"} if token != "" else {},
                body=None if body is None and method == "GET" else json.dumps(body or {}),
                **PATIENT,
                allow_nonstandard_methods=True,
                **extra,
            )
        except HTTPClientError as error:
            text = error.response.body.decode()[:500] if error.response else ""
            raise RuntimeError(f"{method} {path}: {error.code} {text}") from None
        return json.loads(response.body or b"null")

    async def add_learners(self, names: list[str]) -> None:
        """The instructor adds the class to the hub, as an admin would."""
        await self.api("POST", "/hub/api/users", {"usernames": names})

    def home(self, name: str) -> Path:
        return self.homes / name

    def link(self, repository: str, branch: str, urlpath: str) -> str:
        """The instructor guide's nbgitpuller link, on this hub."""
        query = urlencode(
            {"repo": repository, "branch": branch, "urlpath": urlpath}, quote_via=quote
        )
        return f"{self.url}/hub/user-redirect/git-pull?{query}"


@dataclass
class Cells:
    """What running one notebook gave: errors (cell index, "Type: message") and seconds."""

    errors: list[tuple[int, str]] = field(default_factory=list)
    seconds: float = 0.0
    outputs: dict[int, list[dict]] = field(default_factory=dict)


def as_output(content: dict, count: int) -> dict:
    """A cell output, as a notebook file holds it, from a kernel message's content."""
    kind = content["output_type"]
    if kind == "stream":
        return {"output_type": kind, "name": content["name"], "text": content["text"]}
    if kind == "error":
        return {k: content[k] for k in ("output_type", "ename", "evalue", "traceback")}
    output = {"output_type": kind, "data": content["data"], "metadata": content.get("metadata", {})}
    if kind == "execute_result":
        output["execution_count"] = count
    return output


class Learner:
    """One learner at a browser, through the hub's and the server's APIs."""

    def __init__(self, hub: LocalHub, name: str):
        self.hub = hub
        self.name = name
        self.token = ""
        self.server = f"/user/{name}"
        self.cookies: dict[str, str] = {}

    async def log_in(self) -> None:
        """A token from the learner's name and password (the hub's own API)."""
        auth = {"auth": {"username": self.name, "password": PASSWORD}}
        reply = await self.hub.api("POST", f"/hub/api/users/{self.name}/tokens", auth, token="")
        self.token = reply["token"]

    async def start_server(self, timeout: float = 600) -> None:
        try:
            await self.hub.api("POST", f"/hub/api/users/{self.name}/server", token=self.token)
        except RuntimeError as error:
            if " 400 " not in str(error):  # 400: it is running already
                raise
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            user = await self.hub.api("GET", f"/hub/api/users/{self.name}", token=self.token)
            server = user.get("servers", {}).get("", {})
            if server.get("ready"):
                return
            await asyncio.sleep(0.5)
        raise RuntimeError(f"{self.name}'s server did not start within {timeout:g} s")

    async def request(self, method: str, path: str, body=None, raw: bool = False):
        response = await http_client().fetch(
            self.hub.url + path,
            method=method,
            headers={"Authorization": f"token {self.token}"},
            body=None if body is None and method in ("GET", "DELETE") else json.dumps(body or {}),
            **PATIENT,
            follow_redirects=True,
            allow_nonstandard_methods=True,
        )
        return response if raw else json.loads(response.body or b"null")

    async def browse(self, url: str, form: dict | None = None, hops: int = 20):
        """What the learner's browser does with ``url``: cookies kept, redirects followed
        (the hub's login, its OAuth handshake with the learner's server)."""
        from http.cookies import SimpleCookie
        from urllib.parse import urljoin

        method, body = ("POST", urlencode(form)) if form else ("GET", None)
        for _ in range(hops):
            headers = {"Cookie": "; ".join(f"{k}={v}" for k, v in self.cookies.items())}
            if body:
                headers["Content-Type"] = "application/x-www-form-urlencoded"
            response = await http_client().fetch(
                url,
                method=method,
                body=body,
                headers=headers,
                follow_redirects=False,
                raise_error=False,
                **PATIENT,
            )
            for header in response.headers.get_list("Set-Cookie"):
                jar = SimpleCookie()
                jar.load(header)
                for name, morsel in jar.items():
                    if morsel["max-age"] == "0" or "1970" in morsel["expires"]:
                        self.cookies.pop(name, None)
                    else:
                        self.cookies[name] = morsel.value
            if response.code in (301, 302, 303, 307, 308):
                url, method, body = urljoin(url, response.headers["Location"]), "GET", None
                continue
            return response
        raise RuntimeError(f"{self.name}: more than {hops} redirects from {url}")

    async def follow_link(self, link: str) -> str:
        """A click on the guide's link: the browser logs in at the hub's login page the
        link leads to, the hub sends it on to the learner's server, whose nbgitpuller
        page runs the pull (the event stream its script reads); git's output."""
        import re
        from urllib.parse import parse_qs
        from urllib.parse import urlsplit

        page = await self.browse(link)
        if "/hub/login" in page.effective_url:
            form = re.search(rb'name="_xsrf" value="([^"]+)"', page.body)
            fields = {"username": self.name, "password": PASSWORD}
            if form:
                fields["_xsrf"] = form.group(1).decode()
            page = await self.browse(page.effective_url, fields)
        if page.code != 200 or b"nbgitpuller" not in page.body:
            raise RuntimeError(f"{self.name}: the link led to {page.effective_url} ({page.code})")
        query = parse_qs(urlsplit(link).query)
        stream = urlencode({"repo": query["repo"][0], "branch": query["branch"][0]})
        response = await self.request("GET", f"{self.server}/git-pull/api?{stream}", raw=True)
        events = [
            json.loads(line[len("data: ") :])
            for line in response.body.decode().splitlines()
            if line.startswith("data: ")
        ]
        output = "".join(event.get("output", "") for event in events)
        if not events or events[-1].get("phase") != "finished":
            raise RuntimeError(f"{self.name}: git pull failed: {events[-1:]}\n{output[-2000:]}")
        return output

    async def read_notebook(self, path: str) -> dict:
        return (await self.request("GET", f"{self.server}/api/contents/{quote(path)}?content=1"))[
            "content"
        ]

    async def save_notebook(self, path: str, nb: dict) -> None:
        body = {"type": "notebook", "format": "json", "content": nb}
        await self.request("PUT", f"{self.server}/api/contents/{quote(path)}", body)

    async def open_notebook(self, path: str) -> str:
        """A session for ``path``, as JupyterLab makes when a notebook opens; the kernel id."""
        body = {
            "path": path,
            "name": Path(path).name,
            "type": "notebook",
            "kernel": {"name": "python3"},
        }
        return (await self.request("POST", f"{self.server}/api/sessions", body))["kernel"]["id"]

    async def run_notebook(self, path: str, timeout: float = 900, save: bool = True) -> Cells:
        """Open ``path``, run its code cells top to bottom over the kernel's websocket
        and (as JupyterLab's autosave does) save it with the new outputs."""
        from tornado.httpclient import HTTPRequest
        from tornado.websocket import websocket_connect

        started = time.monotonic()
        nb = await self.read_notebook(path)
        kernel = await self.open_notebook(path)
        session = uuid.uuid4().hex
        url = (
            self.hub.url.replace("http", "ws", 1)
            + f"{self.server}/api/kernels/{kernel}/channels?session_id={session}"
        )
        socket_ = await websocket_connect(
            HTTPRequest(url, headers={"Authorization": f"token {self.token}"}, **PATIENT),
            max_message_size=1 << 28,
        )
        result = Cells()
        try:
            for index, cell in enumerate(nb["cells"]):
                if cell["cell_type"] != "code" or not "".join(cell["source"]).strip():
                    continue
                outputs = await asyncio.wait_for(
                    self._execute(socket_, session, "".join(cell["source"])), timeout
                )
                result.outputs[index] = outputs
                for output in outputs:
                    if output.get("output_type") == "error":
                        result.errors.append((index, f"{output['ename']}: {output['evalue']}"))
        finally:
            socket_.close()
        if save:
            for count, (index, outputs) in enumerate(sorted(result.outputs.items()), start=1):
                nb["cells"][index]["execution_count"] = count
                nb["cells"][index]["outputs"] = [as_output(o, count) for o in outputs]
            await self.save_notebook(path, nb)
        result.seconds = time.monotonic() - started
        return result

    async def _execute(self, socket_, session: str, code: str) -> list[dict]:
        msg_id = uuid.uuid4().hex
        message = {
            "header": {
                "msg_id": msg_id,
                "msg_type": "execute_request",
                "username": self.name,
                "session": session,
                "date": "",
                "version": "5.3",
            },
            "parent_header": {},
            "metadata": {},
            "content": {
                "code": code,
                "silent": False,
                "store_history": True,
                "user_expressions": {},
                "allow_stdin": False,
                "stop_on_error": False,
            },
            "channel": "shell",
            "buffers": [],
        }
        await socket_.write_message(json.dumps(message))
        outputs, replied, idle = [], False, False
        while not (replied and idle):
            raw = await socket_.read_message()
            if raw is None:
                raise RuntimeError(f"{self.name}: the kernel's websocket closed")
            if isinstance(raw, bytes):
                continue  # a binary frame: widget buffers, not cell output
            reply = json.loads(raw)
            if reply.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind = reply["header"]["msg_type"]
            if reply.get("channel") == "shell" and kind == "execute_reply":
                replied = True
            elif kind == "status" and reply["content"].get("execution_state") == "idle":
                idle = True
            elif kind in ("stream", "error", "execute_result", "display_data"):
                outputs.append(dict(reply["content"], output_type=kind))
        return outputs

    async def shut_down_kernels(self) -> None:
        for session in await self.request("GET", f"{self.server}/api/sessions"):
            await self.request("DELETE", f"{self.server}/api/sessions/{session['id']}")

    def peak_memory_mb(self) -> dict[str, float]:
        """The peaks of the server and of each kernel still open, and their sum."""
        found = processes_of(self.name)

        def peak(pid: int) -> float:
            try:
                return peak_resident_mb(pid)
            except RuntimeError:  # it ended in the meantime
                return 0.0

        server = sum(peak(pid) for pid in found["server"])
        kernels = [peak(pid) for pid in found["kernels"]]
        return {"server": server, "kernels": kernels, "total": server + sum(kernels)}
