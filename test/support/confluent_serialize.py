"""Frames records with Confluent's official Python serializers (confluent_kafka.schema_registry),
registering the schema on first use, so tests read records exactly as Confluent producers write them.

Usage: python confluent_serialize.py <request.json>   ->   one JSON line on stdout.

Request: {"registry_url", "topic", "format": "avro"|"json"|"protobuf", "schema": text,
          "records": [...], "is_key": bool, "message": "Name" (protobuf only, optional)}
Answer:  {"subject", "schema_id", "records": [base64 of each framed record]}

The subject is TopicNameStrategy's: <topic>-value, or <topic>-key with is_key. Each record is the
Confluent wire format: magic byte 0, the schema id as 4 bytes big-endian, then the payload (for
Protobuf the payload starts with the message-index list, a single 0 byte for the first message).

Record form, per format (JSON has no bytes or decimals, hence the conventions):
  avro      a JSON value the schema accepts; anywhere in it {"$bytes": "<base64>"} becomes bytes
            (bytes, fixed, and decimal on bytes/fixed as raw bytes) and {"$decimal": "12.34"} a
            decimal.Decimal (logicalType decimal). Unions take the first branch that fits (fastavro).
  json      the JSON value itself; JSONSerializer validates it against the schema.
  protobuf  the proto3 JSON mapping of the message (json_format.ParseDict: int64 as string or
            number, bytes as base64, enums by name). The .proto text is compiled at run time with
            grpcio-tools' protoc; it may import google/protobuf/*.proto, nothing else. The message is
            `message` (a dotted path for a nested one), by default the first one in the file.
"""

import base64
import decimal
import importlib.resources
import importlib.util
import json
import os
import struct
import sys
import tempfile

from confluent_kafka.schema_registry import SchemaRegistryClient, topic_subject_name_strategy
from confluent_kafka.serialization import MessageField, SerializationContext


def avro_value(v):
    if isinstance(v, list):
        return [avro_value(x) for x in v]
    if isinstance(v, dict):
        if set(v) == {"$bytes"}:
            return base64.b64decode(v["$bytes"], validate=True)
        if set(v) == {"$decimal"}:
            return decimal.Decimal(v["$decimal"])
        return {k: avro_value(x) for k, x in v.items()}
    return v


def protobuf_class(proto_text: str, message: str | None, workdir: str):
    """Compiles the .proto with protoc (grpcio-tools) into a _pb2 module and returns the message class."""
    from grpc_tools import protoc

    with open(os.path.join(workdir, "schema.proto"), "w", encoding="utf-8") as f:
        f.write(proto_text)
    well_known = str(importlib.resources.files("grpc_tools") / "_proto")
    code = protoc.main(["protoc", f"-I{workdir}", f"-I{well_known}", f"--python_out={workdir}", "schema.proto"])
    if code != 0:
        raise SystemExit(f"protoc could not compile the schema (exit {code}; its errors are above)")
    spec = importlib.util.spec_from_file_location("schema_pb2", os.path.join(workdir, "schema_pb2.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    messages = list(module.DESCRIPTOR.message_types_by_name)
    if not messages:
        raise SystemExit("the .proto defines no message")
    path = (message or messages[0]).split(".")
    cls = getattr(module, path[0], None)
    for name in path[1:]:
        cls = getattr(cls, name, None)
    if cls is None:
        raise SystemExit(f"message {message!r} not found; the file defines {', '.join(messages)}")
    return cls


def serializer_for(req: dict, client: SchemaRegistryClient, workdir: str):
    """The official serializer for the format and a function from a request record to its input."""
    fmt = req["format"]
    if fmt == "avro":
        from confluent_kafka.schema_registry.avro import AvroSerializer

        return AvroSerializer(client, req["schema"]), avro_value
    if fmt == "json":
        from confluent_kafka.schema_registry.json_schema import JSONSerializer

        return JSONSerializer(req["schema"], client), lambda r: r
    if fmt == "protobuf":
        from google.protobuf import json_format
        from confluent_kafka.schema_registry.protobuf import ProtobufSerializer

        cls = protobuf_class(req["schema"], req.get("message"), workdir)
        return ProtobufSerializer(cls, client), lambda r: json_format.ParseDict(r, cls())
    raise SystemExit(f"format must be avro, json or protobuf, found {fmt!r}")


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as f:
        req = json.load(f)
    if not req["records"]:
        raise SystemExit("no records: the serializer registers the schema with the first one")
    field = MessageField.KEY if req.get("is_key") else MessageField.VALUE
    ctx = SerializationContext(req["topic"], field)
    client = SchemaRegistryClient({"url": req["registry_url"]})
    with tempfile.TemporaryDirectory(prefix="floe-confluent-") as workdir:
        serialize, to_input = serializer_for(req, client, workdir)
        framed = [serialize(to_input(r), ctx) for r in req["records"]]
    ids = {struct.unpack(">bI", b[:5]) for b in framed}
    if len(ids) != 1 or next(iter(ids))[0] != 0:
        raise SystemExit(f"expected magic byte 0 and one schema id in every record, found {sorted(ids)}")
    print(
        json.dumps(
            {
                "subject": topic_subject_name_strategy(ctx, None),
                "schema_id": next(iter(ids))[1],
                "records": [base64.b64encode(b).decode("ascii") for b in framed],
            }
        )
    )


if __name__ == "__main__":
    main()
