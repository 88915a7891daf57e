"""Clients of `onyx serve`, or of any server of the KServe v2 / Open Inference Protocol as Triton speaks it.

    from onyx.client import HttpClient
    import numpy as np

    client = HttpClient("localhost:8000")
    client.is_server_ready()
    out = client.infer("demo", {"X": np.ones((2, 16), np.float32)})   # {"probabilities": array (2, 10)}

HttpClient speaks REST over one keep-alive connection (http.client, no other dependency than numpy); its infer()
sends and asks for tensors in the binary-tensor extension unless binary=False (plain JSON). GrpcClient speaks
inference.GRPCInferenceService with grpcio and the stubs the build generates from the server's protos
(<build>/serve/python: grpc_service_pb2.py, model_config_pb2.py, ...); it finds them through the environment
variable ONYX_SERVE_STUBS (a folder), next to this module or in the build tree this package is in.

Tensors are numpy arrays. Datatypes: bool BOOL, uint8..uint64 UINT8..UINT64, int8..int64 INT8..INT64, float16
FP16, float32 FP32, float64 FP64; BYTES from object arrays of bytes or str (or 'S'/'U' arrays), returned as
object arrays of bytes. A failed call raises InferenceServerError with the server's message; its status is the
HTTP status (HttpClient) or the grpc.StatusCode (GrpcClient). A client is safe to share between threads (its
calls take turns on the connection); for parallel requests give each thread its own.
"""
import http.client
import importlib
import json
import os
import socket
import struct
import sys
import threading
import urllib.parse

import numpy as np

__all__ = ["HttpClient", "GrpcClient", "InferenceServerError", "v2_datatype", "numpy_dtype"]


class InferenceServerError(Exception):
    """A request the server refused or failed: `status` (HTTP status or grpc.StatusCode) and its `message`."""

    def __init__(self, status, message):
        super().__init__(f"[{status}] {message}")
        self.status = status
        self.message = message


_V2_TO_NUMPY = {
    "BOOL": np.dtype(np.bool_),
    "UINT8": np.dtype(np.uint8), "UINT16": np.dtype(np.uint16),
    "UINT32": np.dtype(np.uint32), "UINT64": np.dtype(np.uint64),
    "INT8": np.dtype(np.int8), "INT16": np.dtype(np.int16),
    "INT32": np.dtype(np.int32), "INT64": np.dtype(np.int64),
    "FP16": np.dtype(np.float16), "FP32": np.dtype(np.float32), "FP64": np.dtype(np.float64),
    "BYTES": np.dtype(np.object_),
}
_NUMPY_TO_V2 = {dt: name for name, dt in _V2_TO_NUMPY.items()}


def v2_datatype(dtype):
    """The protocol's datatype name of a numpy dtype ('FP32', 'BYTES', ...)."""
    dtype = np.dtype(dtype)
    if dtype.kind in "OSU":
        return "BYTES"
    name = _NUMPY_TO_V2.get(dtype.newbyteorder("=") if dtype.byteorder not in "=|" else dtype)
    if name is None:
        raise TypeError(f"numpy dtype {dtype} has no KServe v2 datatype")
    return name


def numpy_dtype(datatype):
    """The numpy dtype of a protocol datatype name (BYTES: object)."""
    try:
        return _V2_TO_NUMPY[datatype]
    except KeyError:
        raise TypeError(f"datatype {datatype!r} has no numpy dtype here (BF16 and others are not mapped)") from None


def _as_bytes(v):
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v)
    if isinstance(v, str):
        return v.encode("utf-8")
    if isinstance(v, np.generic):
        return _as_bytes(v.item())
    return str(v).encode("utf-8")


def _raw_input(array):
    """(datatype, little-endian raw bytes) of an input array; BYTES as 4-byte length + bytes per element."""
    datatype = v2_datatype(array.dtype)
    if datatype == "BYTES":
        parts = []
        for v in array.ravel(order="C"):
            b = _as_bytes(v)
            parts.append(struct.pack("<I", len(b)))
            parts.append(b)
        return datatype, b"".join(parts)
    return datatype, np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<")).tobytes()


def _decode_bytes_elements(raw, count, name):
    out, off = [], 0
    for _ in range(count):
        if off + 4 > len(raw):
            raise InferenceServerError(0, f"output '{name}': BYTES data is truncated")
        (n,) = struct.unpack_from("<I", raw, off)
        off += 4
        out.append(bytes(raw[off:off + n]))
        off += n
    return out


def _array_from_raw(raw, datatype, shape, name):
    count = int(np.prod(shape, dtype=np.int64)) if len(shape) else 1
    if datatype == "BYTES":
        arr = np.empty(count, dtype=np.object_)
        arr[:] = _decode_bytes_elements(raw, count, name)
        return arr.reshape(shape)
    dt = numpy_dtype(datatype)
    if len(raw) != count * dt.itemsize:
        raise InferenceServerError(0, f"output '{name}': {len(raw)} bytes for {datatype} {list(shape)}")
    return np.frombuffer(raw, dtype=dt.newbyteorder("<")).astype(dt, copy=True).reshape(shape)


def _input_array(name, value):
    arr = np.asarray(value)
    if arr.dtype.kind in "SU":
        arr = arr.astype(np.object_)
    return arr


# ------------------------------------------------------------------------------------------------ REST
class HttpClient:
    """The REST protocol over one keep-alive HTTP/1.1 connection. url: "host:port" or "http://host:port"."""

    def __init__(self, url="localhost:8000", timeout=60.0):
        if "://" not in url:
            url = "http://" + url
        parts = urllib.parse.urlsplit(url)
        if parts.scheme != "http":
            raise ValueError(f"HttpClient speaks plain http, not {parts.scheme}")
        self._host = parts.hostname or "localhost"
        self._port = parts.port or 8000
        self._prefix = parts.path.rstrip("/")
        self._timeout = timeout
        self._conn = None
        self._lock = threading.Lock()

    def close(self):
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- transport
    def _send(self, method, path, body, headers):
        """(status, headers, body); reconnects once when a kept-alive connection turns out closed."""
        with self._lock:
            for attempt in (0, 1):
                fresh = self._conn is None
                if fresh:
                    self._conn = http.client.HTTPConnection(self._host, self._port, timeout=self._timeout)
                try:
                    self._conn.request(method, self._prefix + path, body=body, headers=headers or {})
                    resp = self._conn.getresponse()
                    data = resp.read()
                    if resp.will_close:
                        self._conn.close()
                        self._conn = None
                    return resp.status, resp.headers, data
                except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError,
                        http.client.CannotSendRequest, http.client.BadStatusLine):
                    self._conn.close()
                    self._conn = None
                    if fresh or attempt:
                        raise
                except (OSError, http.client.HTTPException):
                    self._conn.close()
                    self._conn = None
                    raise

    def _call(self, method, path, body=None, headers=None):
        status, hdrs, data = self._send(method, path, body, headers)
        if status >= 400:
            raise InferenceServerError(status, _error_text(data, status))
        return status, hdrs, data

    def _json(self, method, path, payload=None):
        body = None if payload is None else json.dumps(payload).encode()
        headers = {"Content-Type": "application/json"} if body is not None else {}
        _, _, data = self._call(method, path, body, headers)
        return json.loads(data) if data else {}

    @staticmethod
    def _model_path(name, version):
        p = "/v2/models/" + urllib.parse.quote(name, safe="")
        if version:
            p += "/versions/" + urllib.parse.quote(str(version), safe="")
        return p

    # -- health and metadata
    def is_server_live(self):
        return self._send("GET", "/v2/health/live", None, None)[0] == 200

    def is_server_ready(self):
        return self._send("GET", "/v2/health/ready", None, None)[0] == 200

    def is_model_ready(self, name, version=""):
        return self._send("GET", self._model_path(name, version) + "/ready", None, None)[0] == 200

    def server_metadata(self):
        return self._json("GET", "/v2")

    def model_metadata(self, name, version=""):
        return self._json("GET", self._model_path(name, version))

    def model_config(self, name, version=""):
        return self._json("GET", self._model_path(name, version) + "/config")

    def statistics(self, name="", version=""):
        """Triton's statistics extension: {"model_stats": [...]} of one model, or of all with name ""."""
        path = self._model_path(name, version) + "/stats" if name else "/v2/models/stats"
        return self._json("GET", path)

    # -- model repository
    def repository_index(self, ready=False):
        return self._json("POST", "/v2/repository/index", {"ready": bool(ready)})

    def load_model(self, name, config=None):
        """Loads (or reloads) a model (explicit model control mode); `config`: a ModelConfig dict or JSON text."""
        payload = {}
        if config is not None:
            payload["parameters"] = {"config": config if isinstance(config, str) else json.dumps(config)}
        self._json("POST", "/v2/repository/models/" + urllib.parse.quote(name, safe="") + "/load", payload)

    def unload_model(self, name):
        self._json("POST", "/v2/repository/models/" + urllib.parse.quote(name, safe="") + "/unload", {})

    # -- inference
    def infer(self, name, inputs, outputs=None, version="", binary=True, request_id="", timeout_us=None):
        """Runs the model on `inputs` ({name: array}); returns {output name: array} (the `outputs` named, or all).

        binary: tensors travel as raw bytes after the JSON (the binary-tensor extension); False sends and asks for
        JSON data. timeout_us: the request's queue timeout (parameter "timeout")."""
        request = {"inputs": []}
        if request_id:
            request["id"] = request_id
        params = {}
        if timeout_us is not None:
            params["timeout"] = int(timeout_us)
        blobs = []
        for in_name, value in inputs.items():
            arr = _input_array(in_name, value)
            entry = {"name": in_name, "shape": list(arr.shape)}
            if binary:
                entry["datatype"], raw = _raw_input(arr)
                entry["parameters"] = {"binary_data_size": len(raw)}
                blobs.append(raw)
            else:
                entry["datatype"] = v2_datatype(arr.dtype)
                entry["data"] = _json_data(arr, entry["datatype"])
            request["inputs"].append(entry)
        if outputs is not None:
            request["outputs"] = [{"name": o, "parameters": {"binary_data": bool(binary)}} for o in outputs]
        elif binary:
            params["binary_data_output"] = True
        if params:
            request["parameters"] = params
        header = json.dumps(request, separators=(",", ":")).encode()
        if blobs:
            body = header + b"".join(blobs)
            headers = {"Content-Type": "application/octet-stream",
                       "Inference-Header-Content-Length": str(len(header))}
        else:
            body, headers = header, {"Content-Type": "application/json"}
        _, hdrs, data = self._call("POST", self._model_path(name, version) + "/infer", body, headers)
        return _parse_infer_response(data, hdrs)


def _error_text(data, status):
    try:
        j = json.loads(data)
        if isinstance(j, dict) and "error" in j:
            return str(j["error"])
    except ValueError:
        pass
    text = data.decode("utf-8", "replace").strip()
    return text or http.client.responses.get(status, "error")


def _json_data(arr, datatype):
    flat = arr.ravel(order="C")
    if datatype == "BYTES":
        return [v.decode("utf-8") if isinstance(v, (bytes, bytearray)) else str(v) for v in flat]
    return flat.tolist()


def _parse_infer_response(data, headers):
    header_len = headers.get("Inference-Header-Content-Length")
    if header_len is not None:
        n = int(header_len)
        head, binary = data[:n], memoryview(data)[n:]
    else:
        head, binary = data, memoryview(b"")
    resp = json.loads(head)
    result, offset = {}, 0
    for out in resp.get("outputs", []):
        name, datatype, shape = out["name"], out["datatype"], tuple(out["shape"])
        size = (out.get("parameters") or {}).get("binary_data_size")
        if size is not None:
            raw = binary[offset:offset + size]
            offset += size
            result[name] = _array_from_raw(raw, datatype, shape, name)
        elif datatype == "BYTES":
            arr = np.empty(len(out["data"]), dtype=np.object_)
            arr[:] = [_as_bytes(v) for v in out["data"]]
            result[name] = arr.reshape(shape)
        else:
            result[name] = np.array(out["data"], dtype=numpy_dtype(datatype)).reshape(shape)
    return result


# ------------------------------------------------------------------------------------------------ gRPC
_STUB_MODULES = ("grpc_service_pb2", "grpc_service_pb2_grpc", "model_config_pb2")


def _stub_dirs():
    env = os.environ.get("ONYX_SERVE_STUBS", "")
    dirs = [d for d in env.split(os.pathsep) if d]
    here = os.path.dirname(os.path.abspath(__file__))
    dirs.append(here)
    # in a build tree: <build>/python/onyx/client.py and the stubs in <build>/serve/python
    dirs.append(os.path.normpath(os.path.join(here, "..", "..", "serve", "python")))
    return dirs


def _load_stubs():
    for d in _stub_dirs():
        if all(os.path.isfile(os.path.join(d, m + ".py")) for m in _STUB_MODULES):
            if d not in sys.path:
                sys.path.append(d)  # the stubs import each other as top-level modules
            return (importlib.import_module("grpc_service_pb2"), importlib.import_module("grpc_service_pb2_grpc"))
    raise ImportError("onyx.client.GrpcClient needs the gRPC stubs generated from the server's protos "
                      "(grpc_service_pb2.py, grpc_service_pb2_grpc.py, model_config_pb2.py): build the target "
                      "onyx_serve_python_stubs (they land in <build>/serve/python) and set ONYX_SERVE_STUBS to that "
                      "folder; looked in " + ", ".join(_stub_dirs()))


class GrpcClient:
    """inference.GRPCInferenceService over an insecure channel. url: "host:port"."""

    def __init__(self, url="localhost:8001", timeout=60.0, max_message_bytes=2**31 - 1):
        try:
            import grpc
        except ImportError as e:
            raise ImportError("onyx.client.GrpcClient needs grpcio (Debian: python3-grpcio; pip: grpcio)") from e
        self._grpc = grpc
        self._pb, pb_grpc = _load_stubs()
        from google.protobuf import json_format
        self._json_format = json_format
        if "://" in url:
            url = url.split("://", 1)[1]
        self._channel = grpc.insecure_channel(url, options=[("grpc.max_send_message_length", max_message_bytes),
                                                            ("grpc.max_receive_message_length", max_message_bytes)])
        self._stub = pb_grpc.GRPCInferenceServiceStub(self._channel)
        self._timeout = timeout

    def close(self):
        self._channel.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _rpc(self, method, request):
        try:
            return getattr(self._stub, method)(request, timeout=self._timeout)
        except self._grpc.RpcError as e:
            raise InferenceServerError(e.code(), e.details()) from None

    def _dict(self, message):
        return self._json_format.MessageToDict(message, preserving_proto_field_name=True)

    # -- health and metadata
    def is_server_live(self):
        return self._rpc("ServerLive", self._pb.ServerLiveRequest()).live

    def is_server_ready(self):
        return self._rpc("ServerReady", self._pb.ServerReadyRequest()).ready

    def is_model_ready(self, name, version=""):
        return self._rpc("ModelReady", self._pb.ModelReadyRequest(name=name, version=str(version))).ready

    def server_metadata(self):
        r = self._rpc("ServerMetadata", self._pb.ServerMetadataRequest())
        return {"name": r.name, "version": r.version, "extensions": list(r.extensions)}

    def model_metadata(self, name, version=""):
        r = self._rpc("ModelMetadata", self._pb.ModelMetadataRequest(name=name, version=str(version)))

        def tensors(ts):
            return [{"name": t.name, "datatype": t.datatype, "shape": list(t.shape)} for t in ts]

        return {"name": r.name, "versions": list(r.versions), "platform": r.platform,
                "inputs": tensors(r.inputs), "outputs": tensors(r.outputs)}

    def model_config(self, name, version=""):
        """The ModelConfig message as a dict (protobuf's JSON mapping: 64-bit integers are strings)."""
        r = self._rpc("ModelConfig", self._pb.ModelConfigRequest(name=name, version=str(version)))
        return self._dict(r.config)

    def statistics(self, name="", version=""):
        r = self._rpc("ModelStatistics", self._pb.ModelStatisticsRequest(name=name, version=str(version)))
        return self._dict(r)

    # -- model repository
    def repository_index(self, ready=False):
        r = self._rpc("RepositoryIndex", self._pb.RepositoryIndexRequest(ready=bool(ready)))
        return [self._dict(m) for m in r.models]

    def load_model(self, name, config=None):
        req = self._pb.RepositoryModelLoadRequest(model_name=name)
        if config is not None:
            req.parameters["config"].string_param = config if isinstance(config, str) else json.dumps(config)
        self._rpc("RepositoryModelLoad", req)

    def unload_model(self, name):
        self._rpc("RepositoryModelUnload", self._pb.RepositoryModelUnloadRequest(model_name=name))

    # -- inference
    def infer(self, name, inputs, outputs=None, version="", binary=True, request_id="", timeout_us=None):
        """As HttpClient.infer; tensors always travel as raw bytes (`binary` is accepted for symmetry)."""
        req = self._pb.ModelInferRequest(model_name=name, model_version=str(version), id=request_id)
        if timeout_us is not None:
            req.parameters["timeout"].int64_param = int(timeout_us)
        for in_name, value in inputs.items():
            arr = _input_array(in_name, value)
            t = req.inputs.add()
            t.name = in_name
            t.shape.extend(arr.shape)
            t.datatype, raw = _raw_input(arr)
            req.raw_input_contents.append(raw)
        for o in outputs or ():
            req.outputs.add().name = o
        r = self._rpc("ModelInfer", req)
        result = {}
        for i, out in enumerate(r.outputs):
            shape = tuple(out.shape)
            if i < len(r.raw_output_contents):
                result[out.name] = _array_from_raw(r.raw_output_contents[i], out.datatype, shape, out.name)
            else:
                result[out.name] = _array_from_contents(out.contents, out.datatype, shape)
        return result


def _array_from_contents(contents, datatype, shape):
    field = {"BOOL": "bool_contents", "UINT8": "uint_contents", "UINT16": "uint_contents",
             "UINT32": "uint_contents", "UINT64": "uint64_contents", "INT8": "int_contents",
             "INT16": "int_contents", "INT32": "int_contents", "INT64": "int64_contents",
             "FP16": "fp32_contents", "FP32": "fp32_contents", "FP64": "fp64_contents",
             "BYTES": "bytes_contents"}[datatype]
    values = list(getattr(contents, field))
    if datatype == "BYTES":
        arr = np.empty(len(values), dtype=np.object_)
        arr[:] = [bytes(v) for v in values]
        return arr.reshape(shape)
    return np.array(values, dtype=numpy_dtype(datatype)).reshape(shape)
