from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Purpose(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PURPOSE_UNSPECIFIED: _ClassVar[Purpose]
    DOCUMENT: _ClassVar[Purpose]
    QUERY: _ClassVar[Purpose]

class Format(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    FORMAT_UNSPECIFIED: _ClassVar[Format]
    PLAIN: _ClassVar[Format]
    MARKDOWN: _ClassVar[Format]
PURPOSE_UNSPECIFIED: Purpose
DOCUMENT: Purpose
QUERY: Purpose
FORMAT_UNSPECIFIED: Format
PLAIN: Format
MARKDOWN: Format

class EmbedRequest(_message.Message):
    __slots__ = ("profile", "texts", "purpose")
    PROFILE_FIELD_NUMBER: _ClassVar[int]
    TEXTS_FIELD_NUMBER: _ClassVar[int]
    PURPOSE_FIELD_NUMBER: _ClassVar[int]
    profile: str
    texts: _containers.RepeatedScalarFieldContainer[str]
    purpose: Purpose
    def __init__(self, profile: _Optional[str] = ..., texts: _Optional[_Iterable[str]] = ..., purpose: _Optional[_Union[Purpose, str]] = ...) -> None: ...

class Vector(_message.Message):
    __slots__ = ("values",)
    VALUES_FIELD_NUMBER: _ClassVar[int]
    values: _containers.RepeatedScalarFieldContainer[float]
    def __init__(self, values: _Optional[_Iterable[float]] = ...) -> None: ...

class EmbedResponse(_message.Message):
    __slots__ = ("profile", "dimensions", "vectors")
    PROFILE_FIELD_NUMBER: _ClassVar[int]
    DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    VECTORS_FIELD_NUMBER: _ClassVar[int]
    profile: str
    dimensions: int
    vectors: _containers.RepeatedCompositeFieldContainer[Vector]
    def __init__(self, profile: _Optional[str] = ..., dimensions: _Optional[int] = ..., vectors: _Optional[_Iterable[_Union[Vector, _Mapping]]] = ...) -> None: ...

class Evidence(_message.Message):
    __slots__ = ("note_id", "version", "content")
    NOTE_ID_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    note_id: str
    version: int
    content: str
    def __init__(self, note_id: _Optional[str] = ..., version: _Optional[int] = ..., content: _Optional[str] = ...) -> None: ...

class AnswerRequest(_message.Message):
    __slots__ = ("question", "previous_questions", "evidence", "format", "notebooks")
    QUESTION_FIELD_NUMBER: _ClassVar[int]
    PREVIOUS_QUESTIONS_FIELD_NUMBER: _ClassVar[int]
    EVIDENCE_FIELD_NUMBER: _ClassVar[int]
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    NOTEBOOKS_FIELD_NUMBER: _ClassVar[int]
    question: str
    previous_questions: _containers.RepeatedScalarFieldContainer[str]
    evidence: _containers.RepeatedCompositeFieldContainer[Evidence]
    format: Format
    notebooks: _containers.RepeatedCompositeFieldContainer[NotebookRef]
    def __init__(self, question: _Optional[str] = ..., previous_questions: _Optional[_Iterable[str]] = ..., evidence: _Optional[_Iterable[_Union[Evidence, _Mapping]]] = ..., format: _Optional[_Union[Format, str]] = ..., notebooks: _Optional[_Iterable[_Union[NotebookRef, _Mapping]]] = ...) -> None: ...

class NotebookRef(_message.Message):
    __slots__ = ("id", "name")
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    id: str
    name: str
    def __init__(self, id: _Optional[str] = ..., name: _Optional[str] = ...) -> None: ...

class ProposalDraft(_message.Message):
    __slots__ = ("summary", "change_json")
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    CHANGE_JSON_FIELD_NUMBER: _ClassVar[int]
    summary: str
    change_json: str
    def __init__(self, summary: _Optional[str] = ..., change_json: _Optional[str] = ...) -> None: ...

class Citation(_message.Message):
    __slots__ = ("note_id", "version", "quote", "start", "end")
    NOTE_ID_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    QUOTE_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    END_FIELD_NUMBER: _ClassVar[int]
    note_id: str
    version: int
    quote: str
    start: int
    end: int
    def __init__(self, note_id: _Optional[str] = ..., version: _Optional[int] = ..., quote: _Optional[str] = ..., start: _Optional[int] = ..., end: _Optional[int] = ...) -> None: ...

class AnswerResponse(_message.Message):
    __slots__ = ("text", "format", "generator", "citations", "proposals", "proposals_dropped", "configuration")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    GENERATOR_FIELD_NUMBER: _ClassVar[int]
    CITATIONS_FIELD_NUMBER: _ClassVar[int]
    PROPOSALS_FIELD_NUMBER: _ClassVar[int]
    PROPOSALS_DROPPED_FIELD_NUMBER: _ClassVar[int]
    CONFIGURATION_FIELD_NUMBER: _ClassVar[int]
    text: str
    format: Format
    generator: str
    citations: _containers.RepeatedCompositeFieldContainer[Citation]
    proposals: _containers.RepeatedCompositeFieldContainer[ProposalDraft]
    proposals_dropped: int
    configuration: str
    def __init__(self, text: _Optional[str] = ..., format: _Optional[_Union[Format, str]] = ..., generator: _Optional[str] = ..., citations: _Optional[_Iterable[_Union[Citation, _Mapping]]] = ..., proposals: _Optional[_Iterable[_Union[ProposalDraft, _Mapping]]] = ..., proposals_dropped: _Optional[int] = ..., configuration: _Optional[str] = ...) -> None: ...

class DescribeRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class DescribeResponse(_message.Message):
    __slots__ = ("configuration",)
    CONFIGURATION_FIELD_NUMBER: _ClassVar[int]
    configuration: str
    def __init__(self, configuration: _Optional[str] = ...) -> None: ...
