// Table and JSON output (see perf_report.h). Column widths are nccl-tests' so scripts that read its output
// read ours.
#include "perf_report.h"

#include <cinttypes>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <sstream>

namespace braid {
namespace perf {
namespace {

std::string sprintf1(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string sprintf1(const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  return buf;
}

std::string jsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += sprintf1("\\u%04x", c);
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string jsonNumber(double v) {
  if (!std::isfinite(v)) return "null";
  return sprintf1("%.6g", v);
}

std::string jsonPlacement(const Placement& p) {
  return "{\"time_us\": " + jsonNumber(p.timeUs) + ", \"algbw\": " + jsonNumber(p.algBw) +
         ", \"busbw\": " + jsonNumber(p.busBw) +
         ", \"wrong\": " + (p.wrong < 0 ? std::string("null") : std::to_string(p.wrong)) + "}";
}

std::string placementColumns(const Placement& p) {
  std::string wrong = p.wrong < 0 ? "N/A" : sprintf1("%" PRId64, p.wrong);
  return sprintf1("  %7s  %6.2f  %6.2f  %5s", formatTime(p.timeUs).c_str(), p.algBw, p.busBw, wrong.c_str());
}

}  // namespace

std::string formatTime(double us) {
  if (us >= 10000.0) return sprintf1("%7.0f", us);
  if (us >= 100.0) return sprintf1("%7.1f", us);
  return sprintf1("%7.2f", us);
}

std::string paramsLine(const PerfArgs& a) {
  return sprintf1(
      "nThread %d nGpus %d minBytes %zu maxBytes %zu step: %zu(%s) warmup iters: %d iters: %d agg iters: "
      "%d validation: %d graph: %d",
      a.nThreads, a.nGpus, a.minBytes, a.maxBytes, a.stepFactor > 1 ? a.stepFactor : a.stepBytes,
      a.stepFactor > 1 ? "factor" : "bytes", a.warmupIters, a.iters, a.aggIters, a.check, a.graphLaunches);
}

std::string tableHeader(bool cputime) {
  const char* t = cputime ? "cputime" : "time";
  std::string s;
  s += sprintf1("# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          \n", "", "",
                "", "", "");
  s += sprintf1("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s %6s  %7s  %6s  %6s %6s\n", "size", "count", "type", "redop",
                "root", t, "algbw", "busbw", "#wrong", t, "algbw", "busbw", "#wrong");
  s += sprintf1("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %5s  %7s  %6s  %6s  %5s\n", "(B)", "(elements)", "", "",
                "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
  return s;
}

std::string formatRow(const ResultRow& r) {
  return sprintf1("%12zu  %12zu  %8s  %6s  %6d", r.size, r.count, r.type.c_str(), r.redop.c_str(), r.root) +
         placementColumns(r.outOfPlace) + placementColumns(r.inPlace);
}

std::string tableFooter(int64_t outOfBounds, double avgBusBw, double minBw) {
  std::string s = sprintf1("# Out of bounds values : %" PRId64 " %s\n", outOfBounds, outOfBounds ? "FAILED" : "OK");
  const char* verdict = minBw > 0 ? (avgBusBw < minBw * 0.9 ? "FAILED" : "OK") : "";
  s += sprintf1("# Avg bus bandwidth    : %g %s\n", avgBusBw, verdict);
  s += "#\n";
  return s;
}

std::string isoDateUtc() {
  std::time_t now = std::time(nullptr);
  std::tm tm;
  gmtime_r(&now, &tm);
  char buf[64];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

bool writeJson(const std::string& path, const RunInfo& info, const PerfArgs& a, const std::vector<ResultRow>& rows,
               int64_t outOfBounds, double avgBusBw, std::string* error) {
  std::ostringstream o;
  o << "{\n";
  o << "  \"format\": \"braid-perf/1\",\n";
  o << "  \"tool\": " << jsonString(info.tool) << ",\n";
  o << "  \"collective\": " << jsonString(info.collective) << ",\n";
  o << "  \"library\": {\"name\": " << jsonString(info.library) << ", \"path\": " << jsonString(info.libraryPath)
    << ", \"version\": " << jsonString(info.libraryVersion) << "},\n";
  o << "  \"date\": " << jsonString(info.date) << ",\n";
  o << "  \"host\": " << jsonString(info.hostname) << ",\n";
  o << "  \"launcher\": " << jsonString(info.launcher) << ",\n";
  o << "  \"buffers\": " << jsonString(info.buffers) << ",\n";
  o << "  \"nranks\": " << info.nranks << ",\n";
  o << "  \"nprocs\": " << info.nprocs << ",\n";
  o << "  \"devices\": [";
  for (size_t i = 0; i < info.devices.size(); ++i) o << (i ? ", " : "") << jsonString(info.devices[i]);
  o << "],\n";
  o << "  \"command\": [";
  for (size_t i = 0; i < info.commandLine.size(); ++i) o << (i ? ", " : "") << jsonString(info.commandLine[i]);
  o << "],\n";
  o << "  \"args\": {\"nthreads\": " << a.nThreads << ", \"ngpus\": " << a.nGpus << ", \"minbytes\": " << a.minBytes
    << ", \"maxbytes\": " << a.maxBytes << ", \"stepbytes\": " << a.stepBytes << ", \"stepfactor\": " << a.stepFactor
    << ", \"iters\": " << a.iters << ", \"warmup_iters\": " << a.warmupIters << ", \"agg_iters\": " << a.aggIters
    << ", \"run_cycles\": " << a.runCycles << ", \"check\": " << a.check << ", \"op\": " << jsonString(a.opArg)
    << ", \"datatype\": " << jsonString(a.typeArg) << ", \"root\": " << jsonString(a.rootArg)
    << ", \"blocking\": " << a.blocking << ", \"stream_null\": " << a.streamNull << ", \"timeout\": " << a.timeoutSec
    << ", \"cudagraph\": " << a.graphLaunches << ", \"report_cputime\": " << a.reportCputime
    << ", \"average\": " << a.average << ", \"local_register\": " << a.localRegister << "},\n";
  o << "  \"results\": [\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    const ResultRow& r = rows[i];
    o << "    {\"size\": " << r.size << ", \"count\": " << r.count << ", \"type\": " << jsonString(r.type)
      << ", \"redop\": " << jsonString(r.redop) << ", \"root\": " << r.root
      << ", \"out_of_place\": " << jsonPlacement(r.outOfPlace) << ", \"in_place\": " << jsonPlacement(r.inPlace) << "}"
      << (i + 1 < rows.size() ? "," : "") << "\n";
  }
  o << "  ],\n";
  o << "  \"out_of_bounds\": " << outOfBounds << ",\n";
  o << "  \"avg_busbw\": " << jsonNumber(avgBusBw) << "\n";
  o << "}\n";
  std::ofstream f(path, std::ios::out | std::ios::trunc);
  if (!f) {
    *error = "cannot open " + path + " for writing";
    return false;
  }
  f << o.str();
  f.close();
  if (!f) {
    *error = "writing " + path + " failed";
    return false;
  }
  return true;
}

}  // namespace perf
}  // namespace braid
