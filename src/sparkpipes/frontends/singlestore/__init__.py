"""SQL front end of sparkpipes: SingleStore-style pipeline DDL parsed to a typed AST.

``parse(text)`` cuts a script into statements and returns their AST nodes;
``parse_one(text)`` parses exactly one. Nothing is executed here. Every node renders
canonical SQL with ``to_sql()``, and ``parse_one(s.to_sql()) == s``. Invalid input raises
``ParseError`` (syntax) or ``SemanticError`` (parses, but cannot be valid), both carrying
the line, column and offending token; no other exception escapes the parser.
"""

from sparkpipes.frontends.singlestore.ast_base import (
    DataType,
    Expr,
    Literal,
    Node,
    Statement,
    StructField,
    quote_ident,
    quote_string,
)
from sparkpipes.frontends.singlestore.ast_links import (
    CreateLink,
    DropLink,
    ShowCreateLink,
    ShowLinks,
)
from sparkpipes.frontends.singlestore.ast_pipelines import (
    AlterPipeline,
    AlterPipelineDropFile,
    Assignment,
    CreatePipeline,
    DetachPipeline,
    DropPipeline,
    FieldMapping,
    FieldsFormat,
    LinesFormat,
    LoadColumn,
    LoadData,
    ShowCreatePipeline,
    ShowPipelines,
    StartAllPipelines,
    StartPipeline,
    StopAllPipelines,
    StopPipeline,
    Target,
    TestPipeline,
    Transform,
)
from sparkpipes.frontends.singlestore.ast_procedures import (
    CreateProcedure,
    DropProcedure,
    ProcedureParam,
    ShowProcedures,
)
from sparkpipes.frontends.singlestore.ast_queries import Delete, Insert, Query, Update
from sparkpipes.frontends.singlestore.ast_session import (
    CreateDatabase,
    SetVariable,
    ShowVariables,
    UseDatabase,
)
from sparkpipes.frontends.singlestore.ast_tables import (
    AlterTableAddColumn,
    AlterTableDropColumn,
    AlterTableModifyColumn,
    ColumnDef,
    CreateIndex,
    CreateTable,
    DescribeTable,
    DropIndex,
    DropTable,
    ShowCreateTable,
    ShowTables,
    TableKey,
)
from sparkpipes.frontends.singlestore.errors import ParseError, SemanticError
from sparkpipes.frontends.singlestore.parser import parse, parse_one

__all__ = [
    "AlterPipeline",
    "AlterPipelineDropFile",
    "AlterTableAddColumn",
    "AlterTableDropColumn",
    "AlterTableModifyColumn",
    "Assignment",
    "ColumnDef",
    "CreateDatabase",
    "CreateIndex",
    "CreateLink",
    "CreatePipeline",
    "CreateProcedure",
    "CreateTable",
    "DataType",
    "Delete",
    "DescribeTable",
    "DetachPipeline",
    "DropIndex",
    "DropLink",
    "DropPipeline",
    "DropProcedure",
    "DropTable",
    "Expr",
    "FieldMapping",
    "FieldsFormat",
    "Insert",
    "LinesFormat",
    "Literal",
    "LoadColumn",
    "LoadData",
    "Node",
    "ParseError",
    "ProcedureParam",
    "Query",
    "SemanticError",
    "SetVariable",
    "ShowCreateLink",
    "ShowCreatePipeline",
    "ShowCreateTable",
    "ShowLinks",
    "ShowPipelines",
    "ShowProcedures",
    "ShowTables",
    "ShowVariables",
    "StartAllPipelines",
    "StartPipeline",
    "Statement",
    "StopAllPipelines",
    "StopPipeline",
    "StructField",
    "TableKey",
    "Target",
    "TestPipeline",
    "Transform",
    "Update",
    "UseDatabase",
    "parse",
    "parse_one",
    "quote_ident",
    "quote_string",
]
