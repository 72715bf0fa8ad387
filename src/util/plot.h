// Line plots as standalone SVG files (training curves, reward-vs-time), with no dependency.
#pragma once

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace tempo {

struct PlotSeries {
  std::string name;                               // in the legend (none if empty)
  std::vector<std::pair<double, double>> points;  // (x, y); NaN y values are skipped
};

// One chart: axes from the points' extent (y includes 0), four ticks per axis, a legend.
inline std::string line_plot_svg(const std::string& title, const std::string& x_label,
                                 const std::string& y_label,
                                 const std::vector<PlotSeries>& series) {
  static const char* kColors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728",
                                  "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"};
  const double W = 640, H = 400, L = 70, R = 20, Tp = 40, B = 50;
  double xmin = 0, xmax = 1e-300, ymin = 0, ymax = 1e-300;
  for (const PlotSeries& s : series)
    for (const auto& [x, y] : s.points) {
      if (std::isnan(y)) continue;
      xmax = std::max(xmax, x), xmin = std::min(xmin, x);
      ymax = std::max(ymax, y), ymin = std::min(ymin, y);
    }
  if (xmax - xmin < 1e-12) xmax = xmin + 1;
  if (ymax - ymin < 1e-12) ymax = ymin + 1;
  auto fmt = [](double v, int prec = 1) {
    std::ostringstream s;
    s.setf(std::ios::fixed);
    s.precision(prec);
    s << v;
    return s.str();
  };
  auto X = [&](double x) { return L + (W - L - R) * (x - xmin) / (xmax - xmin); };
  auto Y = [&](double y) { return H - B - (H - Tp - B) * (y - ymin) / (ymax - ymin); };
  std::ostringstream s;
  s << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H
    << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
    << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
    << "<text x=\"" << W / 2 << "\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">" << title
    << "</text>\n";
  s << "<line x1=\"" << L << "\" y1=\"" << H - B << "\" x2=\"" << W - R << "\" y2=\"" << H - B
    << "\" stroke=\"black\"/>\n<line x1=\"" << L << "\" y1=\"" << Tp << "\" x2=\"" << L
    << "\" y2=\"" << H - B << "\" stroke=\"black\"/>\n";
  const int xprec = xmax - xmin >= 20 ? 0 : 2, yprec = ymax - ymin >= 20 ? 0 : 2;
  for (int k = 0; k <= 4; ++k) {
    const double xv = xmin + (xmax - xmin) * k / 4, yv = ymin + (ymax - ymin) * k / 4;
    s << "<line x1=\"" << fmt(X(xv)) << "\" y1=\"" << H - B << "\" x2=\"" << fmt(X(xv))
      << "\" y2=\"" << H - B + 5 << "\" stroke=\"black\"/>\n<text x=\"" << fmt(X(xv)) << "\" y=\""
      << H - B + 18 << "\" text-anchor=\"middle\">" << fmt(xv, xprec) << "</text>\n";
    s << "<line x1=\"" << L - 5 << "\" y1=\"" << fmt(Y(yv)) << "\" x2=\"" << L << "\" y2=\""
      << fmt(Y(yv)) << "\" stroke=\"black\"/>\n<text x=\"" << L - 8 << "\" y=\"" << fmt(Y(yv) + 4)
      << "\" text-anchor=\"end\">" << fmt(yv, yprec) << "</text>\n";
  }
  s << "<text x=\"" << (L + W - R) / 2 << "\" y=\"" << H - 12 << "\" text-anchor=\"middle\">"
    << x_label << "</text>\n<text x=\"18\" y=\"" << (Tp + H - B) / 2
    << "\" text-anchor=\"middle\" transform=\"rotate(-90 18 " << (Tp + H - B) / 2 << ")\">"
    << y_label << "</text>\n";
  for (size_t k = 0; k < series.size(); ++k) {
    const char* color = kColors[k % (sizeof(kColors) / sizeof(kColors[0]))];
    s << "<polyline fill=\"none\" stroke=\"" << color << "\" stroke-width=\"2\" points=\"";
    for (const auto& [x, y] : series[k].points)
      if (!std::isnan(y)) s << fmt(X(x)) << "," << fmt(Y(y)) << " ";
    s << "\"/>\n";
    if (!series[k].name.empty())
      s << "<text x=\"" << W - R - 150 << "\" y=\"" << Tp + 14 * static_cast<double>(k) + 4
        << "\" fill=\"" << color << "\">" << series[k].name << "</text>\n";
  }
  s << "</svg>\n";
  return s.str();
}

}  // namespace tempo
