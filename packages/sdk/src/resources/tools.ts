/**
 * `tools` group: the caller's subscribed tools as function definitions for a model API called
 * directly (OpenAI, Anthropic, Gemini), and the model's tool calls run on the platform
 * (docs/tools-export.md).
 */
import { type Core, type Result, unwrap } from '../core.js';

type Exported = Result<'tools.export'>;
type Definition = Exported['tools'][number];

/** `format` of {@link ToolsResource.export}. */
export type ToolExportFormat = Exported['format'];
/** OpenAI Chat Completions `ChatCompletionFunctionTool` (`tools` of `chat.completions.create`). */
export type OpenAIToolDefinition = Extract<Definition, { function: unknown }>;
/** OpenAI Responses API `FunctionTool` (`tools` of `responses.create`). */
export type OpenAIResponsesToolDefinition = Exclude<Extract<Definition, { type: 'function' }>, { function: unknown }>;
/** Anthropic Messages `Tool` (`tools` of `messages.create`). */
export type AnthropicToolDefinition = Extract<Definition, { input_schema: unknown }>;
/** Gemini `Tool` holding `functionDeclarations` (`config.tools` of `models.generateContent`). */
export type GeminiToolDefinition = Extract<Definition, { functionDeclarations: unknown }>;

/** The definition type of each export format. */
export interface ToolDefinitions {
  openai: OpenAIToolDefinition;
  'openai-responses': OpenAIResponsesToolDefinition;
  anthropic: AnthropicToolDefinition;
  gemini: GeminiToolDefinition;
}

/** The answer of {@link ToolsResource.export} for format `F`. */
export type ToolExport<F extends ToolExportFormat> = Omit<Exported, 'format' | 'tools'> & {
  format: F;
  tools: Array<ToolDefinitions[F]>;
};

/** Tools for model APIs without MCP. */
export class ToolsResource {
  constructor(private readonly core: Core) {}

  /**
   * The caller's subscribed tools (an agent: its own subscriptions) as the provider's `tools`
   * list, ready to pass as is (`GET /v1/tools/export?format=`); `functions` maps each name back to
   * its service and tool.
   */
  async export<F extends ToolExportFormat>(format: F): Promise<ToolExport<F>> {
    return (await unwrap(this.core.http.GET('/v1/tools/export', { params: { query: { format } } }))) as ToolExport<F>;
  }

  /**
   * Run a tool call the model made, passed as its API returned it (an OpenAI `tool_calls[i]` or
   * Responses `function_call`, an Anthropic `tool_use` block, a Gemini `functionCall` part), in
   * session `sessionId` or a new one (`session_id` of the answer). `message` of the answer is the
   * result in the same provider's shape, to append to the conversation.
   * @throws AgentPlatformError as `sessions.execute` does, and `not_found` for a name the caller's export does not hold
   */
  call(toolCall: object, opts: { sessionId?: string } = {}) {
    return unwrap(
      this.core.http.POST('/v1/tools/call', {
        params: { query: opts.sessionId ? { session_id: opts.sessionId } : {} },
        body: toolCall as Record<string, unknown>,
      }),
    );
  }
}
