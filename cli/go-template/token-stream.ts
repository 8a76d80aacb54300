import type { Fail, Token } from './lexer.ts';

/** The lexer's tokens read one at a time, with a step back, as Go's parser reads them. */
export class TokenStream {
  protected readonly source: string;
  protected readonly fail: Fail;
  readonly #tokens: Token[];
  #at = 0;

  constructor(source: string, tokens: Token[], fail: Fail) {
    this.source = source;
    this.#tokens = tokens;
    this.fail = fail;
  }

  protected next(): Token {
    const token = this.#tokens[this.#at] as Token;
    if (token.kind !== 'eof') this.#at++;
    return token;
  }

  protected peek(): Token {
    return this.#tokens[this.#at] as Token;
  }

  /** The token just read. */
  protected previous(): Token {
    return this.#tokens[this.#at - 1] as Token;
  }

  /** Steps back to `token`, the last one read. */
  protected backup(token: Token): void {
    this.#at = this.#tokens.lastIndexOf(token, this.#at);
  }

  protected nextNonSpace(): Token {
    let token = this.next();
    while (token.kind === 'space') token = this.next();
    return token;
  }

  protected peekNonSpace(): Token {
    while (this.peek().kind === 'space') this.#at++;
    return this.peek();
  }

  /** `unexpected "," in operand`, the token shown as Go shows it. */
  protected unexpected(token: Token, context: string): never {
    const shown =
      token.kind === 'eof'
        ? 'EOF'
        : token.kind === 'keyword'
          ? `<${token.text}>`
          : JSON.stringify(token.text.length > 10 ? `${token.text.slice(0, 10)}...` : token.text);
    return this.fail(token.pos, `unexpected ${shown} in ${context}`);
  }

  protected expectClose(context: string): void {
    const token = this.nextNonSpace();
    if (token.kind !== 'rightDelim') this.unexpected(token, context);
  }
}
