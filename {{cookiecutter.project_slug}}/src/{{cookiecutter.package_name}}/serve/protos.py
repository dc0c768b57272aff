"""TF Serving's own configuration messages, to parse every config before it reaches the server.

ModelServerConfig (models.config) comes from tensorflow-serving-api, TF Serving's Python package.
That package does not ship BatchingParameters (session_bundle_config.proto) or MonitoringConfig
(monitoring_config.proto); where a build of it does, those modules are used. Otherwise the two
messages are declared here from TF Serving's .proto files, field for field (names, numbers,
types; BatchingParameters' fields 1-7, the ones this project writes), in a private descriptor
pool, so a misspelt field or a wrong type fails here as it would fail in the server.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from google.protobuf import (
    descriptor_pb2,
    descriptor_pool,
    message_factory,
    text_format,
    wrappers_pb2,
)

PACKAGE = "tensorflow.serving"
F = descriptor_pb2.FieldDescriptorProto
# BatchingParameters, from tensorflow_serving/servables/tensorflow/session_bundle_config.proto.
BATCHING_FIELDS = (
    ("max_batch_size", 1, F.TYPE_MESSAGE, ".google.protobuf.Int64Value", F.LABEL_OPTIONAL),
    ("batch_timeout_micros", 2, F.TYPE_MESSAGE, ".google.protobuf.Int64Value", F.LABEL_OPTIONAL),
    ("max_enqueued_batches", 3, F.TYPE_MESSAGE, ".google.protobuf.Int64Value", F.LABEL_OPTIONAL),
    ("num_batch_threads", 4, F.TYPE_MESSAGE, ".google.protobuf.Int64Value", F.LABEL_OPTIONAL),
    ("thread_pool_name", 5, F.TYPE_MESSAGE, ".google.protobuf.StringValue", F.LABEL_OPTIONAL),
    ("allowed_batch_sizes", 6, F.TYPE_INT64, None, F.LABEL_REPEATED),
    ("pad_variable_length_inputs", 7, F.TYPE_BOOL, None, F.LABEL_OPTIONAL),
)
# PrometheusConfig and MonitoringConfig, from tensorflow_serving/config/monitoring_config.proto.
PROMETHEUS_FIELDS = (
    ("enable", 1, F.TYPE_BOOL, None, F.LABEL_OPTIONAL),
    ("path", 2, F.TYPE_STRING, None, F.LABEL_OPTIONAL),
)
MONITORING_FIELDS = (
    ("prometheus_config", 1, F.TYPE_MESSAGE, f".{PACKAGE}.PrometheusConfig", F.LABEL_OPTIONAL),
)


class ConfigError(ValueError):
    """A config that TF Serving would refuse: the message names the file's kind and the fault."""


def model_server_config() -> type:
    """tensorflow.serving.ModelServerConfig, the message of --model_config_file."""
    from tensorflow_serving.config import model_server_config_pb2

    return model_server_config_pb2.ModelServerConfig


@cache
def batching_parameters() -> type:
    """tensorflow.serving.BatchingParameters, the message of --batching_parameters_file."""
    try:
        from tensorflow_serving.servables.tensorflow import session_bundle_config_pb2
    except ImportError:
        return _declared()["BatchingParameters"]
    return session_bundle_config_pb2.BatchingParameters


@cache
def monitoring_config() -> type:
    """tensorflow.serving.MonitoringConfig, the message of --monitoring_config_file."""
    try:
        from tensorflow_serving.config import monitoring_config_pb2
    except ImportError:
        return _declared()["MonitoringConfig"]
    return monitoring_config_pb2.MonitoringConfig


def parse(text: str, message: type, kind: str) -> Any:
    """Parse text-format `text` into `message`, as the server does; ConfigError if it cannot."""
    try:
        return text_format.Parse(text, message())
    except text_format.ParseError as error:
        reason = str(error).rstrip(".")
        raise ConfigError(
            f"{kind} does not parse as {message.DESCRIPTOR.full_name}: {reason}."
        ) from None


def to_text(proto: Any) -> str:
    """A message in the text format TF Serving reads."""
    return text_format.MessageToString(proto)


@cache
def _declared() -> dict[str, type]:
    """BatchingParameters, PrometheusConfig and MonitoringConfig in a private descriptor pool."""
    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(wrappers_pb2.DESCRIPTOR.serialized_pb)
    declared = descriptor_pb2.FileDescriptorProto(
        name="project/serving_configs.proto",
        package=PACKAGE,
        syntax="proto3",
        dependency=["google/protobuf/wrappers.proto"],
    )
    messages = (
        ("BatchingParameters", BATCHING_FIELDS),
        ("PrometheusConfig", PROMETHEUS_FIELDS),
        ("MonitoringConfig", MONITORING_FIELDS),
    )
    for name, fields in messages:
        described = declared.message_type.add(name=name)
        for field, number, kind, type_name, label in fields:
            added = described.field.add(name=field, number=number, type=kind, label=label)
            if type_name:
                added.type_name = type_name
    pool.Add(declared)
    return {
        name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{PACKAGE}.{name}"))
        for name, _ in messages
    }
