/* hud_text.h — the HUD's text measured and wrapped with stb_easy_font's
 * widths, without GL: hud.c draws with it, tests/test_hud_text.c checks it.
 * A line longer than its panel (the no-GPU reason, a long path) is broken
 * into pieces that fit instead of running off the window. */
#ifndef RT_HUD_TEXT_H
#define RT_HUD_TEXT_H

#include <string.h>

/* stb_easy_font is a header of static functions (not all used here) written
 * to older warning standards. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wmissing-braces"
#include <stb_easy_font.h>
#pragma GCC diagnostic pop

/* One piece of a wrapped line: text[start, start + len). */
typedef struct RtHudSpan {
    int start, len;
} RtHudSpan;

/* stb_easy_font draws printable ASCII only and indexes its glyph table by
 * the byte (a UTF-8 byte or a tab would read outside it): anything else
 * becomes '?'. */
static inline void rt_hud_text_sanitize(char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 32 || (unsigned char)*s > 126) *s = '?';
}

/* Width in pixels of one printable character at `scale` pixels per font
 * pixel (stb_easy_font's widths add up character by character). */
static inline float rt_hud_char_px(char c, int scale)
{
    char s[2] = {c, 0};
    return (float)stb_easy_font_width(s) * (float)scale;
}

/* Breaks text (printable ASCII) into pieces no wider than max_px: at the
 * last blank that fits, else mid-word (a path wider than the panel); the
 * blanks at a break are dropped, and every piece holds at least one
 * character, however narrow max_px. Writes up to max pieces to out and
 * returns how many the text needs (1 for an empty text). */
static inline int rt_hud_wrap(const char *text, float max_px, int scale, RtHudSpan *out, int max)
{
    int len = (int)strlen(text), n = 0, i = 0;
    do {
        float w = 0.0f;
        int j = i, blank = -1;
        while (j < len) {
            float cw = rt_hud_char_px(text[j], scale);
            if (w + cw > max_px && j > i) break;
            if (text[j] == ' ') blank = j;
            w += cw;
            j++;
        }
        int end = j;
        if (j < len && text[j] != ' ' && blank > i) end = blank; /* break after the last word that fits */
        int piece = end;
        while (piece > i && text[piece - 1] == ' ') piece--;
        if (n < max) out[n] = (RtHudSpan){i, piece - i};
        n++;
        i = end;
        while (i < len && text[i] == ' ') i++;
    } while (i < len);
    return n;
}

#endif
