from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class WriteRequest(_message.Message):
    __slots__ = ("timeseries", "metadata")
    TIMESERIES_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    timeseries: _containers.RepeatedCompositeFieldContainer[TimeSeries]
    metadata: _containers.RepeatedCompositeFieldContainer[MetricMetadata]
    def __init__(self, timeseries: _Optional[_Iterable[_Union[TimeSeries, _Mapping]]] = ..., metadata: _Optional[_Iterable[_Union[MetricMetadata, _Mapping]]] = ...) -> None: ...

class MetricMetadata(_message.Message):
    __slots__ = ("type", "metric_family_name", "help", "unit")
    class MetricType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        UNKNOWN: _ClassVar[MetricMetadata.MetricType]
        COUNTER: _ClassVar[MetricMetadata.MetricType]
        GAUGE: _ClassVar[MetricMetadata.MetricType]
        HISTOGRAM: _ClassVar[MetricMetadata.MetricType]
        GAUGEHISTOGRAM: _ClassVar[MetricMetadata.MetricType]
        SUMMARY: _ClassVar[MetricMetadata.MetricType]
        INFO: _ClassVar[MetricMetadata.MetricType]
        STATESET: _ClassVar[MetricMetadata.MetricType]
    UNKNOWN: MetricMetadata.MetricType
    COUNTER: MetricMetadata.MetricType
    GAUGE: MetricMetadata.MetricType
    HISTOGRAM: MetricMetadata.MetricType
    GAUGEHISTOGRAM: MetricMetadata.MetricType
    SUMMARY: MetricMetadata.MetricType
    INFO: MetricMetadata.MetricType
    STATESET: MetricMetadata.MetricType
    TYPE_FIELD_NUMBER: _ClassVar[int]
    METRIC_FAMILY_NAME_FIELD_NUMBER: _ClassVar[int]
    HELP_FIELD_NUMBER: _ClassVar[int]
    UNIT_FIELD_NUMBER: _ClassVar[int]
    type: MetricMetadata.MetricType
    metric_family_name: str
    help: str
    unit: str
    def __init__(self, type: _Optional[_Union[MetricMetadata.MetricType, str]] = ..., metric_family_name: _Optional[str] = ..., help: _Optional[str] = ..., unit: _Optional[str] = ...) -> None: ...

class Sample(_message.Message):
    __slots__ = ("value", "timestamp")
    VALUE_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    value: float
    timestamp: int
    def __init__(self, value: _Optional[float] = ..., timestamp: _Optional[int] = ...) -> None: ...

class Label(_message.Message):
    __slots__ = ("name", "value")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    name: str
    value: str
    def __init__(self, name: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...

class TimeSeries(_message.Message):
    __slots__ = ("labels", "samples")
    LABELS_FIELD_NUMBER: _ClassVar[int]
    SAMPLES_FIELD_NUMBER: _ClassVar[int]
    labels: _containers.RepeatedCompositeFieldContainer[Label]
    samples: _containers.RepeatedCompositeFieldContainer[Sample]
    def __init__(self, labels: _Optional[_Iterable[_Union[Label, _Mapping]]] = ..., samples: _Optional[_Iterable[_Union[Sample, _Mapping]]] = ...) -> None: ...
