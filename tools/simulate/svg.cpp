// The picture: one panel per algorithm, stacked, requests per time bucket.
// Hand-written SVG, no dependencies.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "simulate.hpp"

namespace sim {

namespace {

constexpr double width = 960;
constexpr double left = 78;
constexpr double right = 30;
constexpr double plot_w = width - left - right;
constexpr double header_base_h = 100;
constexpr double line_h = 18;
constexpr std::size_t wrap_chars = 118;  // at 13px, within the plot width
constexpr double panel_title_h = 28;
constexpr double plot_h = 150;
constexpr double panel_h = panel_title_h + plot_h + 40;
constexpr double footer_h = 34;

const char* const font = "DejaVu Sans, Helvetica, Arial, sans-serif";
const char* const c_text = "#1f2328";
const char* const c_muted = "#57606a";
const char* const c_axis = "#444c56";
const char* const c_grid = "#e4e8ec";
const char* const c_offered = "#c8d3df";
const char* const c_allowed = "#1a66c9";
const char* const c_limit = "#d1242f";
const char* const c_busiest = "#fff1b8";
const char* const c_busiest_strip = "#e3a008";
const char* const c_break = "#8c959f";
const char* const c_boundary = "#8c959f";
const char* const c_over = "#c2410c";
const char* const c_within = "#1a7f37";

std::string num(double v) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.2f", v);
    std::string s = buf;
    while (!s.empty() && s.back() == '0') s.pop_back();
    if (!s.empty() && s.back() == '.') s.pop_back();
    return s == "-0" ? "0" : s;
}

std::string esc(const std::string& s) {
    std::string out;
    for (char c : s) {
        switch (c) {
            case '&':
                out += "&amp;";
                break;
            case '<':
                out += "&lt;";
                break;
            case '>':
                out += "&gt;";
                break;
            case '"':
                out += "&quot;";
                break;
            default:
                out += c;
        }
    }
    return out;
}

// 1, 2 or 5 times a power of ten, at least raw
double nice_step(double raw) {
    if (raw <= 0) return 1;
    double p = std::pow(10.0, std::floor(std::log10(raw)));
    for (double m : {1.0, 2.0, 5.0, 10.0}) {
        if (m * p >= raw * (1 - 1e-9)) return m * p;
    }
    return 10 * p;
}

struct TimeUnit {
    const char* name;
    double us;
};

TimeUnit time_unit(std::int64_t duration_us) {
    if (duration_us < 2000000) return {"ms", 1e3};
    if (duration_us < 600 * std::int64_t{1000000}) return {"s", 1e6};
    if (duration_us < 36000 * std::int64_t{1000000}) return {"min", 60e6};
    return {"h", 3600e6};
}

std::string text(double x, double y, const std::string& body,
                 const std::string& attrs = "") {
    return "<text x=\"" + num(x) + "\" y=\"" + num(y) + "\"" +
           (attrs.empty() ? "" : " " + attrs) + ">" + body + "</text>\n";
}

std::string rect(double x, double y, double w, double h, const char* fill,
                 const std::string& attrs = "") {
    return "<rect x=\"" + num(x) + "\" y=\"" + num(y) + "\" width=\"" +
           num(w) + "\" height=\"" + num(h) + "\" fill=\"" + fill + "\"" +
           (attrs.empty() ? "" : " " + attrs) + "/>\n";
}

std::string line(double x1, double y1, double x2, double y2,
                 const char* stroke, const std::string& attrs = "") {
    return "<line x1=\"" + num(x1) + "\" y1=\"" + num(y1) + "\" x2=\"" +
           num(x2) + "\" y2=\"" + num(y2) + "\" stroke=\"" + stroke + "\"" +
           (attrs.empty() ? "" : " " + attrs) + "/>\n";
}

}  // namespace

std::string format_duration_ms(std::uint64_t ms) {
    if (ms == 0) return "0s";
    struct Unit {
        const char* name;
        std::uint64_t ms;
    };
    const Unit units[] = {{"d", 86400000}, {"h", 3600000}, {"m", 60000},
                          {"s", 1000},     {"ms", 1}};
    std::string out;
    for (const Unit& u : units) {
        if (ms >= u.ms) {
            out += std::to_string(ms / u.ms) + u.name;
            ms %= u.ms;
        }
    }
    return out;
}

// words into lines of at most wrap_chars
std::vector<std::string> wrap(const std::string& text) {
    std::vector<std::string> lines(1);
    std::size_t i = 0;
    while (i < text.size()) {
        std::size_t sp = text.find(' ', i);
        if (sp == std::string::npos) sp = text.size();
        std::string word = text.substr(i, sp - i);
        std::string& last = lines.back();
        if (!last.empty() && last.size() + 1 + word.size() > wrap_chars) {
            lines.push_back(word);
        } else {
            last += (last.empty() ? "" : " ") + word;
        }
        i = sp + 1;
    }
    return lines;
}

std::string render_svg(const Chart& chart) {
    const std::vector<std::string> subtitle = wrap(chart.subtitle);
    const double header_h =
        header_base_h + line_h * static_cast<double>(subtitle.size() - 1);
    const double duration = static_cast<double>(chart.duration_us);
    const double period = static_cast<double>(chart.period_us);
    const double bucket = static_cast<double>(chart.bucket_us);
    const double height =
        header_h + panel_h * static_cast<double>(chart.panels.size()) +
        footer_h;
    const std::string bucket_text =
        format_duration_ms(static_cast<std::uint64_t>(chart.bucket_us / 1000));
    const std::string period_text =
        format_duration_ms(static_cast<std::uint64_t>(chart.period_us / 1000));
    // in requests: N counts units of cost
    const double limit_per_bucket = static_cast<double>(chart.limit) * bucket /
                                    period / static_cast<double>(chart.cost);

    // One y scale for all panels: they see the same offered traffic. When a
    // few buckets dwarf the rest (a burst), the scale breaks: the lower part
    // of the plot shows 0..split linearly, the upper part split..ytop.
    std::uint64_t ymax = 1;
    std::vector<std::uint64_t> nonzero;
    for (const Panel& p : chart.panels) {
        for (std::uint64_t v : p.offered) {
            ymax = std::max(ymax, v);
            if (v > 0) nonzero.push_back(v);
        }
        for (std::uint64_t v : p.allowed) ymax = std::max(ymax, v);
    }
    std::sort(nonzero.begin(), nonzero.end());
    double typical = limit_per_bucket;
    if (!nonzero.empty()) {
        typical = std::max(typical, static_cast<double>(
            nonzero[(nonzero.size() - 1) * 9 / 10]));
    }
    const double top = std::max(static_cast<double>(ymax), limit_per_bucket);
    const bool broken = top > 6 * typical && top >= 8;
    double split = 0, lower_step = 0, lower_h = plot_h;
    if (broken) {
        lower_step = std::max(1.0, nice_step(2.5 * typical / 3));
        split = std::ceil(2.5 * typical / lower_step) * lower_step;
        lower_h = plot_h * 0.5;
    }
    double ystep = std::max(1.0, nice_step((top - split) / 4));
    double ytop = std::ceil(top / ystep) * ystep;
    if (ytop < split + (top - split) * 1.06) ytop += ystep;
    // the height of v, in pixels above the plot's bottom
    auto y_height = [&](double v) {
        if (!broken) return plot_h * v / ytop;
        if (v <= split) return lower_h * v / split;
        return lower_h + (plot_h - lower_h) * (v - split) / (ytop - split);
    };

    TimeUnit unit = time_unit(chart.duration_us);
    double xstep_us = nice_step(duration / unit.us / 10) * unit.us;

    auto x_of = [&](double t_us) { return left + plot_w * t_us / duration; };

    std::string s;
    s += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
    s += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(width) +
         "\" height=\"" + num(height) + "\" viewBox=\"0 0 " + num(width) +
         " " + num(height) + "\" font-family=\"" + font + "\" fill=\"" +
         c_text + "\">\n";
    s += rect(0, 0, width, height, "#ffffff");

    // header: title, subtitle, legend
    s += text(left, 30, esc(chart.title), "font-size=\"19\" font-weight=\"bold\"");
    for (std::size_t i = 0; i < subtitle.size(); i++) {
        s += text(left, 52 + line_h * static_cast<double>(i), esc(subtitle[i]),
                  std::string("font-size=\"13\" fill=\"") + c_muted + "\"");
    }
    {
        double x = left, y = header_h - 20;
        auto swatch_text = [&](const std::string& label) {
            s += text(x + 22, y + 4.5, esc(label), "font-size=\"12.5\"");
            x += 22 + 7.2 * static_cast<double>(label.size()) + 22;
        };
        s += rect(x, y - 6, 16, 12, c_offered);
        swatch_text("offered");
        s += rect(x, y - 6, 16, 12, c_allowed);
        swatch_text("allowed");
        s += line(x, y, x + 16, y, c_limit,
                  "stroke-width=\"2\" stroke-dasharray=\"5,3\"");
        swatch_text("limit: N per " + period_text + " = " +
                    num(limit_per_bucket) + " per bucket");
        s += rect(x, y - 6, 16, 12, c_busiest,
                  "stroke=\"#e0c060\" stroke-width=\"0.8\"");
        swatch_text("busiest " + period_text + " window");
        s += line(x + 8, y - 7, x + 8, y + 7, c_boundary,
                  "stroke-dasharray=\"2,2\"");
        swatch_text("window boundary");
    }

    for (std::size_t i = 0; i < chart.panels.size(); i++) {
        const Panel& p = chart.panels[i];
        const double y0 = header_h + panel_h * static_cast<double>(i);
        const double py = y0 + panel_title_h;  // plot top
        const double pb = py + plot_h;         // plot bottom
        auto y_of = [&](double v) { return pb - y_height(v); };

        // title line: the algorithm, and what it let through
        std::string name = p.algorithm;
        if (p.burst > 0) name += " (burst " + std::to_string(p.burst) + ")";
        s += text(left, y0 + 18, esc(name),
                  "font-size=\"15\" font-weight=\"bold\"");
        const std::uint64_t max_units = p.max_window * chart.cost;
        double ratio = static_cast<double>(max_units) /
                       static_cast<double>(chart.limit);
        char ratio_text[32];
        std::snprintf(ratio_text, sizeof(ratio_text), "%.1f", ratio);
        s += "<text x=\"" + num(width - right) + "\" y=\"" + num(y0 + 18) +
             "\" font-size=\"13\" text-anchor=\"end\">offered " +
             std::to_string(p.offered_total) + " · allowed " +
             std::to_string(p.allowed_total) + " · max allowed in any " +
             period_text + ": <tspan font-weight=\"bold\" fill=\"" +
             (max_units > chart.limit ? c_over : c_within) + "\">" +
             std::to_string(p.max_window) + " (" + ratio_text +
             "×N)</tspan> vs N = " + std::to_string(chart.limit) +
             "</text>\n";

        // the busiest PERIOD
        if (p.max_window > 0) {
            double start = static_cast<double>(p.max_window_start_us);
            double end = std::min(duration, start + period);
            double w = std::max(1.5, x_of(end) - x_of(start));
            s += rect(x_of(start), py, w, plot_h, c_busiest);
        }

        // y grid and labels
        std::vector<double> ticks;
        if (broken) {
            for (double v = 0; v <= split + 1e-9; v += lower_step) {
                ticks.push_back(v);
            }
            for (double v = std::floor(split / ystep + 1) * ystep;
                 v <= ytop + 1e-9; v += ystep) {
                if (y_height(v) - y_height(split) >= 14) ticks.push_back(v);
            }
        } else {
            for (double v = 0; v <= ytop + 1e-9; v += ystep) ticks.push_back(v);
        }
        for (double v : ticks) {
            double y = y_of(v);
            if (v > 0) s += line(left, y, left + plot_w, y, c_grid);
            s += text(left - 7, y + 4, num(v),
                      std::string("font-size=\"11.5\" text-anchor=\"end\" "
                                  "fill=\"") + c_muted + "\"");
        }
        s += text(0, 0, "requests / " + bucket_text,
                  std::string("font-size=\"12\" text-anchor=\"middle\" "
                              "fill=\"") + c_muted + "\" transform=\"translate(" +
                      num(left - 48) + "," + num(py + plot_h / 2) +
                      ") rotate(-90)\"");

        // bars: offered behind, allowed in front
        for (std::size_t b = 0; b < p.offered.size(); b++) {
            double t0 = static_cast<double>(b) * bucket;
            double t1 = std::min(duration, t0 + bucket);
            double x = x_of(t0), w = x_of(t1) - x;
            double gap = w > 5 ? 1 : 0;
            if (p.offered[b] > 0) {
                double h = y_height(static_cast<double>(p.offered[b]));
                s += rect(x + gap / 2, pb - h, w - gap, h, c_offered);
            }
            if (b < p.allowed.size() && p.allowed[b] > 0) {
                double h = y_height(static_cast<double>(p.allowed[b]));
                s += rect(x + gap / 2, pb - h, w - gap, h, c_allowed);
            }
        }

        // values above a scale break are hard to read off: written out
        if (broken) {
            std::size_t tall = 0;
            for (std::uint64_t v : p.offered) tall += v > split ? 1 : 0;
            for (std::size_t b = 0; tall <= 12 && b < p.offered.size(); b++) {
                if (p.offered[b] <= split) continue;
                double x = x_of(std::min(duration, static_cast<double>(b + 1) *
                                                       bucket)) + 3;
                double yo = y_of(static_cast<double>(p.offered[b]));
                double ya = y_of(static_cast<double>(p.allowed[b]));
                s += text(x, yo + 9, std::to_string(p.offered[b]),
                          std::string("font-size=\"11\" fill=\"") + c_muted +
                              "\"");
                if (p.allowed[b] > split && yo + 9 + 11 <= ya + 9) {
                    s += text(x, ya + 9, std::to_string(p.allowed[b]),
                              std::string("font-size=\"11\" "
                                          "font-weight=\"bold\" fill=\"") +
                                  c_allowed + "\"");
                }
            }
        }

        // window boundaries (fixed windows are aligned on them)
        if (duration / period <= 60) {
            for (double t = period; t < duration; t += period) {
                s += line(x_of(t), py, x_of(t), pb, c_boundary,
                          "stroke-dasharray=\"2,3\"");
            }
        }

        // the limit, per bucket
        s += line(left, y_of(limit_per_bucket), left + plot_w,
                  y_of(limit_per_bucket), c_limit,
                  "stroke-width=\"1.6\" stroke-dasharray=\"6,4\"");

        // the busiest PERIOD, also as a strip above the plot
        if (p.max_window > 0) {
            double start = static_cast<double>(p.max_window_start_us);
            double end = std::min(duration, start + period);
            double w = std::max(1.5, x_of(end) - x_of(start));
            s += rect(x_of(start), py - 4, w, 4, c_busiest_strip);
        }

        // axes (with the mark of a scale break) and x ticks
        s += line(left, py, left, pb, c_axis);
        s += line(left, pb, left + plot_w, pb, c_axis);
        if (broken) {
            double y = y_of(split) - 6;
            s += line(left, y, left + plot_w, y, c_break,
                      "stroke-dasharray=\"1,3\"");
            s += rect(left - 6, y - 3, 12, 6, "#ffffff");
            s += line(left - 6, y + 1, left + 6, y - 3, c_axis);
            s += line(left - 6, y + 5, left + 6, y + 1, c_axis);
        }
        for (double t = 0; t <= duration + 1e-6; t += xstep_us) {
            double x = x_of(t);
            s += line(x, pb, x, pb + 4, c_axis);
            s += text(x, pb + 17, num(t / unit.us),
                      std::string("font-size=\"11.5\" text-anchor=\"middle\" "
                                  "fill=\"") + c_muted + "\"");
        }
    }

    s += text(left + plot_w / 2, height - 14,
              std::string("simulated time (") + unit.name + ")",
              std::string("font-size=\"12.5\" text-anchor=\"middle\" fill=\"") +
                  c_muted + "\"");
    s += "</svg>\n";
    return s;
}

}  // namespace sim
