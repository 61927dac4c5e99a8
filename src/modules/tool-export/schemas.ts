/** TypeBox schemas of the tool export routes (`/v1/tools/export`, `/v1/tools/call`): the caller's subscribed tools as LLM function definitions. */
import { Type } from 'typebox';
import { ExecuteResultSchema } from '../sessions/schemas.js';
import { FORMATS } from './calls.js';

const Format = Type.Union(
  [Type.Literal(FORMATS[0]), Type.Literal(FORMATS[1]), Type.Literal(FORMATS[2]), Type.Literal(FORMATS[3])],
  {
    description:
      'openai (Chat Completions `tools`), openai-responses (Responses API `tools`), anthropic (Messages `tools`), gemini (`config.tools`)',
  },
);
const Name = Type.String({
  description: 'function name: `^[a-zA-Z_][a-zA-Z0-9_-]{0,63}$`, unique, stable; reversed by POST /v1/tools/call',
});
const Parameters = Type.Record(Type.String(), Type.Unknown(), {
  description: 'JSON Schema of the arguments, reduced to what the provider accepts',
});

export const ExportQuery = Type.Object({ format: Format }, { additionalProperties: false });

/** OpenAI Chat Completions `ChatCompletionFunctionTool`. */
export const OpenAITool = Type.Object({
  type: Type.Literal('function'),
  function: Type.Object({
    name: Name,
    description: Type.String(),
    parameters: Parameters,
    strict: Type.Boolean({ description: 'false when strict mode cannot express the schema' }),
  }),
});
/** OpenAI Responses API `FunctionTool`. */
export const OpenAIResponsesTool = Type.Object({
  type: Type.Literal('function'),
  name: Name,
  description: Type.String(),
  parameters: Parameters,
  strict: Type.Boolean(),
});
/** Anthropic Messages `Tool`. */
export const AnthropicTool = Type.Object({
  name: Name,
  description: Type.String(),
  input_schema: Type.Object(
    { type: Type.Literal('object') },
    { additionalProperties: true, description: 'JSON Schema with an object root' },
  ),
});
/** Gemini `Tool` with its `functionDeclarations` (parameters in the OpenAPI 3.0 subset; none for a tool without arguments). */
export const GeminiTool = Type.Object({
  functionDeclarations: Type.Array(
    Type.Object({ name: Name, description: Type.String(), parameters: Type.Optional(Parameters) }),
  ),
});

export const ExportResultSchema = Type.Object({
  format: Format,
  tools: Type.Array(Type.Union([OpenAITool, OpenAIResponsesTool, AnthropicTool, GeminiTool]), {
    description: "pass as the provider's `tools` (Gemini: `config.tools`) as is",
  }),
  functions: Type.Array(Type.Object({ name: Name, service: Type.String(), tool: Type.String() }), {
    description: 'which service and tool each function name calls',
  }),
});

export const CallQuery = Type.Object(
  {
    session_id: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 100,
        description: 'record the call in this session (`ses_…`); default: a new session, returned in `session_id`',
      }),
    ),
  },
  { additionalProperties: false },
);

export const CallBody = Type.Object(
  {},
  {
    additionalProperties: true,
    description:
      'The tool call the model made, as its API returned it: OpenAI `{id, type: "function", function: {name, arguments}}` or `{type: "function_call", call_id, name, arguments}`, ' +
      'Anthropic `{type: "tool_use", id, name, input}`, Gemini `{functionCall: {name, args, id?}}` or `{name, args}`',
  },
);

export const CallResultSchema = Type.Object({
  format: Format,
  name: Name,
  service: Type.String(),
  tool: Type.String(),
  session_id: Type.String(),
  result: ExecuteResultSchema,
  message: Type.Record(Type.String(), Type.Unknown(), {
    description:
      'the result for the model in the call\'s format: OpenAI `{role: "tool", …}`, Responses `{type: "function_call_output", …}`, Anthropic `{type: "tool_result", …}`, Gemini `{functionResponse: …}`',
  }),
});
