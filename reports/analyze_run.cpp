// `exmy analyze`: the inputs of DIR (names, dtypes, shapes, all checked before anything is
// written), one job per item x combination run on --threads threads (each writes its own slot;
// the CSV is assembled in item and combination order, so it is the same bytes for every thread
// count), and the outputs staged and renamed into place together (docs/SEMANTICS.md 18).
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "reports/analyze.hpp"
#include "reports/output_files.hpp"
#include "reports/plotting.hpp"
#include "reports/report_context.hpp"
#include "sim/common/error.hpp"
#include "sim/io/files.hpp"
#include "sim/io/npy.hpp"
#include "sim/io/sha256.hpp"
#include "sim/native/convert.hpp"

namespace exmy::reports {

namespace {

namespace fs = std::filesystem;

struct Tensor {
  std::string name, file, dtype, sha256;
  std::vector<std::size_t> shape;
  std::vector<float> x;
};

// A matmul: indices into the tensor list (g = -1 without a gradient).
struct Matmul {
  std::string name;
  int x = -1, w = -1, g = -1;
};

// The input's values as fp32: <f4 as stored, <f2 (fp16) and <u2 (bf16 bit patterns, exmy's
// convention for bf16 arrays: ml_dtypes' bfloat16 viewed as uint16) widened exactly.
Tensor read_tensor(const fs::path& path, const std::string& name) {
  Tensor t;
  t.name = name;
  t.file = path.filename().string();
  const io::NpyArray a = io::read_npy(path.string());
  io::require_c_order(a, path.string());
  t.shape = a.shape;
  const std::size_t n = a.count();
  if (n == 0) throw InputError(path.string() + ": an empty array (nothing to analyse)");
  t.x.resize(n);
  if (a.descr == io::kDescrF32) {
    t.dtype = "fp32";
    std::memcpy(t.x.data(), a.data.data(), n * 4);
  } else if (a.descr == io::kDescrF16 || a.descr == io::kDescrU16) {
    const bool half = a.descr == io::kDescrF16;
    t.dtype = half ? "fp16" : "bf16";
    const FloatFormat& f = half ? formats::fp16 : formats::bf16;
    for (std::size_t i = 0; i < n; ++i) {
      std::uint16_t u;
      std::memcpy(&u, a.data.data() + 2 * i, 2);
      t.x[i] = native::to_float(f, u);
    }
  } else {
    throw InputError(path.string() + ": dtype " + a.descr +
                     " (expected <f4 fp32, <f2 fp16, or <u2 bf16 bit patterns: "
                     "x.view(np.uint16) of an ml_dtypes bfloat16 array)");
  }
  std::size_t bad = 0;
  for (float v : t.x) bad += std::isfinite(v) ? 0 : 1;
  if (bad != 0) {
    throw InputError(path.string() + ": " + std::to_string(bad) +
                     " non-finite values (NaN or infinity: no error metric is defined)");
  }
  t.sha256 = io::sha256_file(path.string());
  return t;
}

std::string shape_text(const std::vector<std::size_t>& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) out += (i ? "x" : "") + std::to_string(s[i]);
  return out.empty() ? "scalar" : out;
}

// One CSV row's numbers.
struct Row {
  std::string item, kind, product, shape, format, scheme;
  std::size_t elements = 0, rows_used = 0;
  double rel_mse = 0, nsr = 0, snr_db = 0, max_abs_err = 0, underflow = -1, saturated = -1;
};

Row tensor_row(const Tensor& t, const AnalyzeCombo& c, const ElementStats& s) {
  Row r{t.name, "tensor", "", shape_text(t.shape), c.format, c.scheme};
  r.elements = s.n;
  r.rel_mse = s.rel_mse;
  r.nsr = s.nsr;
  r.snr_db = s.snr_db;
  r.max_abs_err = s.max_abs_err;
  r.underflow = s.underflow;
  r.saturated = s.saturated;
  return r;
}

// The products of a matmul (SEMANTICS 18.3): Y = X W^T; with G, X_grad = G W and W_grad = G^T X.
struct Product {
  const char* name;
  ProductForm form;
  int a, b;  // 0 = X, 1 = W, 2 = G
  std::size_t M, N, K;
};
std::vector<Product> products_of(const Matmul& m, const std::vector<Tensor>& ts) {
  const Tensor &X = ts[m.x], &W = ts[m.w];
  const std::size_t b = X.shape[0], n = X.shape[1], mm = W.shape[0];
  std::vector<Product> p{{"y", ProductForm::nt, 0, 1, b, mm, n}};
  if (m.g >= 0) {
    p.push_back({"x_grad", ProductForm::nn, 2, 1, b, n, mm});
    p.push_back({"w_grad", ProductForm::tn, 2, 0, mm, n, b});
  }
  return p;
}

std::string num(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

const std::vector<std::string> kHeader = {
    "item",      "kind",    "product", "shape",  "format",      "scheme",    "elements",
    "rows_used", "rel_mse", "nsr",     "snr_db", "max_abs_err", "underflow", "saturated"};

std::string csv_text(const std::vector<Row>& rows) {
  Csv csv(kHeader);
  for (const Row& r : rows) {
    csv.row().add(r.item).add(r.kind).add(r.product).add(r.shape).add(r.format).add(r.scheme);
    csv.add(static_cast<long long>(r.elements))
        .add(r.rows_used ? std::to_string(r.rows_used) : std::string());
    csv.add(num(r.rel_mse)).add(num(r.nsr)).add(num(r.snr_db)).add(num(r.max_abs_err));
    csv.add(r.underflow < 0 ? std::string() : num(r.underflow))
        .add(r.saturated < 0 ? std::string() : num(r.saturated));
  }
  return csv.text();
}

}  // namespace

AnalyzeResult run_analyze(const AnalyzeOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::string> skipped;
  const std::vector<AnalyzeCombo> combos = analyze_combos(o.formats, o.schemes, &skipped);
  // The inputs: every *.npy of DIR, sorted by name.
  std::error_code ec;
  if (!fs::is_directory(o.tensors_dir, ec)) {
    throw InputError("--tensors '" + o.tensors_dir + "': not a directory");
  }
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(o.tensors_dir, ec)) {
    if (e.path().extension() == ".npy") files.push_back(e.path());
  }
  if (ec) throw InputError("--tensors '" + o.tensors_dir + "': " + ec.message());
  std::sort(files.begin(), files.end());
  if (files.empty()) throw InputError("--tensors '" + o.tensors_dir + "': no .npy files");
  // The output directory must be new; its parent holds the staging directory.
  const std::string parent = io::parent_directory(o.out_dir, "--out-dir");
  {
    struct stat st {};
    if (::lstat(o.out_dir.c_str(), &st) == 0) {
      throw InputError("--out-dir '" + o.out_dir + "': exists (expected a new directory)");
    }
  }
  std::vector<Tensor> ts;
  std::map<std::string, Matmul> mms;
  for (const fs::path& p : files) {
    const std::string stem = p.stem().string();
    ts.push_back(read_tensor(p, stem));
    const std::size_t dot = stem.rfind('.');
    const std::string role = dot == std::string::npos ? "" : stem.substr(dot + 1);
    if (dot != std::string::npos && dot > 0 && (role == "x" || role == "w" || role == "g")) {
      Matmul& m = mms[stem.substr(0, dot)];
      m.name = stem.substr(0, dot);
      (role == "x" ? m.x : role == "w" ? m.w : m.g) = static_cast<int>(ts.size() - 1);
    }
  }
  std::vector<Matmul> matmuls;
  std::vector<int> in_matmul(ts.size(), -1);
  for (auto& [name, m] : mms) {
    if (m.x < 0 || m.w < 0) {
      throw InputError("--tensors: " + name + "." + (m.x < 0 ? "x" : "w") +
                       ".npy missing (a matmul NAME needs NAME.x.npy and NAME.w.npy; NAME.g.npy "
                       "is optional)");
    }
    const Tensor &X = ts[m.x], &W = ts[m.w];
    const auto dims = [](const Tensor& t) {
      return t.shape.size() == 2 ? std::to_string(t.shape[0]) + "x" + std::to_string(t.shape[1])
                                 : std::to_string(t.shape.size()) + "-d";
    };
    bool ok = X.shape.size() == 2 && W.shape.size() == 2 && X.shape[1] == W.shape[1];
    if (ok && m.g >= 0) {
      const Tensor& G = ts[m.g];
      ok = G.shape.size() == 2 && G.shape[0] == X.shape[0] && G.shape[1] == W.shape[0];
    }
    if (!ok) {
      throw InputError("--tensors: matmul " + name + ": X " + dims(X) + ", W " + dims(W) +
                       (m.g >= 0 ? ", G " + dims(ts[m.g]) : std::string()) +
                       " (expected X b x n, W m x n, G b x m)");
    }
    for (int i : {m.x, m.w, m.g}) {
      if (i >= 0) in_matmul[i] = static_cast<int>(matmuls.size());
    }
    matmuls.push_back(m);
  }
  // Items: each matmul (its tensors with it), then the other tensors, in name order.
  struct Item {
    int matmul = -1;
    std::vector<int> tensors;
  };
  std::vector<Item> items;
  std::map<std::string, int> order;
  for (std::size_t i = 0; i < matmuls.size(); ++i) {
    Item it;
    it.matmul = static_cast<int>(i);
    for (int t : {matmuls[i].x, matmuls[i].w, matmuls[i].g}) {
      if (t >= 0) it.tensors.push_back(t);
    }
    items.push_back(it);
  }
  for (std::size_t i = 0; i < ts.size(); ++i) {
    if (in_matmul[i] < 0) items.push_back({-1, {static_cast<int>(i)}});
  }
  // The reference products (the inputs' own, fp64), once per matmul.
  std::vector<std::vector<std::vector<double>>> refs(matmuls.size());
  std::vector<std::vector<std::vector<std::size_t>>> rows_of(matmuls.size());
  double total_work = 0;
  std::vector<double> item_work(items.size(), 0.0);
  for (std::size_t k = 0; k < items.size(); ++k) {
    for (int t : items[k].tensors) item_work[k] += static_cast<double>(ts[t].x.size());
    if (items[k].matmul >= 0) {
      for (const Product& p : products_of(matmuls[items[k].matmul], ts)) {
        item_work[k] += static_cast<double>(std::min(p.M, o.matmul_rows ? o.matmul_rows : p.M)) *
                        static_cast<double>(p.N * p.K) / 8.0;
      }
    }
    total_work += item_work[k] * static_cast<double>(combos.size());
  }
  ReportOptions ro;
  ro.out_dir = o.out_dir;
  ro.threads = o.threads;
  ro.figures = o.figures;
  ReportContext ctx(ro);
  install_interrupt_handler();
  ctx.parallel_for(matmuls.size(), [&](std::size_t i) {
    const Matmul& m = matmuls[i];
    const Tensor* op[3] = {&ts[m.x], &ts[m.w], m.g >= 0 ? &ts[m.g] : nullptr};
    for (const Product& p : products_of(m, ts)) {
      rows_of[i].push_back(sampled_rows(p.M, o.matmul_rows));
      refs[i].push_back(product_rows(p.form, op[p.a]->x.data(), op[p.b]->x.data(), p.M, p.N, p.K,
                                     rows_of[i].back()));
    }
  });
  // The jobs: item x combination, each its own rows and notes.
  const std::size_t njobs = items.size() * combos.size();
  std::vector<std::vector<Row>> job_rows(njobs);
  std::vector<std::vector<std::string>> job_notes(njobs);
  std::mutex mu;
  double done = 0;
  Progress prog(ctx, "analyze", total_work);
  ctx.parallel_for(njobs, [&](std::size_t j) {
    const Item& it = items[j / combos.size()];
    const AnalyzeCombo& c = combos[j % combos.size()];
    std::vector<RoundTrip> rt(it.tensors.size());
    bool all = true;
    for (std::size_t k = 0; k < it.tensors.size(); ++k) {
      const Tensor& t = ts[it.tensors[k]];
      try {
        rt[k] = fake_quantize(c, t.x, t.shape);
      } catch (const InputError& e) {
        job_notes[j].push_back(t.name + " (" + shape_text(t.shape) + ") x " + c.format + " " +
                               c.scheme + ": " + e.what());
        all = false;
        continue;
      }
      job_rows[j].push_back(
          tensor_row(t, c, element_stats(t.x.data(), rt[k].d.data(), t.x.size(), rt[k].saturated)));
    }
    if (it.matmul >= 0 && all) {
      const Matmul& m = matmuls[it.matmul];
      const float* q[3] = {rt[0].d.data(), rt[1].d.data(), m.g >= 0 ? rt[2].d.data() : nullptr};
      const std::vector<Product> ps = products_of(m, ts);
      for (std::size_t pi = 0; pi < ps.size(); ++pi) {
        const Product& p = ps[pi];
        const std::vector<size_t>& rows = rows_of[it.matmul][pi];
        const ProductStats s = product_stats(
            product_rows(p.form, q[p.a], q[p.b], p.M, p.N, p.K, rows), refs[it.matmul][pi]);
        Row r{m.name,   "matmul",
              p.name,   std::to_string(p.M) + "x" + std::to_string(p.N) + "x" + std::to_string(p.K),
              c.format, c.scheme};
        r.elements = p.M * p.N;
        r.rows_used = rows.size();
        r.nsr = s.rel_err;
        r.rel_mse = s.rel_err * s.rel_err;
        r.snr_db = s.rel_err == 0 ? HUGE_VAL : -20.0 * std::log10(s.rel_err);
        r.max_abs_err = s.max_abs_err;
        job_rows[j].push_back(r);
      }
    }
    if (!o.quiet) {
      std::lock_guard<std::mutex> lock(mu);
      done += item_work[j / combos.size()];
      const Tensor& first = ts[it.tensors[0]];
      prog.step("done " + (it.matmul >= 0 ? matmuls[it.matmul].name : first.name) + " " + c.format +
                    " " + c.scheme,
                done);
    }
  });
  std::vector<Row> rows;
  std::vector<std::string> notes;
  for (std::size_t j = 0; j < njobs; ++j) {
    rows.insert(rows.end(), job_rows[j].begin(), job_rows[j].end());
    notes.insert(notes.end(), job_notes[j].begin(), job_notes[j].end());
  }
  // The outputs, staged together and renamed into place.
  const io::StagingDir stage(parent);
  const std::string csv = csv_text(rows);
  write_file_atomic(stage.path() + "/analyze.csv", csv);
  const FigureResult fig = run_plot_script(ctx, "plot_analyze.py", stage.path());
  std::string md = "# exmy analyze: quantization error of your tensors\n\n";
  md += "Each tensor of `" + o.tensors_dir +
        "` quantized and dequantized under each format x scale granularity with exmy's "
        "quantizer (the functions `exmy quantize` / `exmy dequantize` run; bf16/fp16: exmy's RNE "
        "cast), and each matmul's products from the round trips against the products of the "
        "inputs (docs/SEMANTICS.md 18 defines every metric). The numbers are in "
        "[analyze.csv](analyze.csv), one row per tensor or product x format x scheme.\n\n";
  md += figure_md(fig, "analyze",
                  "noise-to-signal ||Q(x) - x|| / ||x|| (tensors) and ||Q(A)Q(B) - AB|| / ||AB|| "
                  "(products), log10, per item x format/scheme");
  md +=
      "## Largest noise-to-signal per item\n\n| item | product | worst format / scheme | nsr | "
      "best format / scheme | nsr |\n|---|---|---|---|---|---|\n";
  {
    std::map<std::pair<std::string, std::string>, std::pair<const Row*, const Row*>> ext;
    std::vector<std::pair<std::string, std::string>> keys;
    for (const Row& r : rows) {
      const auto key = std::make_pair(r.item, r.product);
      auto [itr, fresh] = ext.emplace(key, std::make_pair(&r, &r));
      if (fresh) {
        keys.push_back(key);
        continue;
      }
      if (r.nsr > itr->second.first->nsr) itr->second.first = &r;
      if (r.nsr < itr->second.second->nsr) itr->second.second = &r;
    }
    for (const auto& k : keys) {
      const auto& [w, b] = ext[k];
      md += "| " + k.first + " | " + (k.second.empty() ? "(tensor)" : k.second) + " | " +
            w->format + " " + w->scheme + " | " + num(w->nsr) + " | " + b->format + " " +
            b->scheme + " | " + num(b->nsr) + " |\n";
    }
  }
  md += "\n## Inputs\n\n| file | dtype | shape | sha256 |\n|---|---|---|---|\n";
  for (const Tensor& t : ts) {
    md +=
        "| " + t.file + " | " + t.dtype + " | " + shape_text(t.shape) + " | `" + t.sha256 + "` |\n";
  }
  md += "\nMatmuls (NAME.x.npy, NAME.w.npy [, NAME.g.npy]): ";
  if (matmuls.empty()) md += "none";
  for (std::size_t i = 0; i < matmuls.size(); ++i) {
    md += (i ? ", " : "") + matmuls[i].name + (matmuls[i].g >= 0 ? " (y, x_grad, w_grad)" : " (y)");
  }
  md += ". Products are evaluated on " +
        (o.matmul_rows ? "at most " + std::to_string(o.matmul_rows) + " evenly spaced rows"
                       : std::string("every row")) +
        " of each output (`rows_used` in the CSV; --matmul-rows).\n\n";
  if (!skipped.empty() || !notes.empty()) {
    md += "## Combinations not analysed\n\n";
    for (const auto& s : skipped) md += "- " + s + "\n";
    for (const auto& s : notes) md += "- " + s + "\n";
    md += "\n";
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const Provenance& pv = ctx.provenance();
  md += "## Provenance\n\n| | |\n|---|---|\n";
  md += "| date (UTC, start) | " + pv.date + " |\n| exmy version | " + pv.version + " |\n";
  md += "| git | " + pv.git_sha + " |\n| compiler, build | " + pv.compiler + " |\n";
  md += "| OS, CPU | " + pv.os + ", " + pv.cpu_model + " |\n";
  md += "| threads | " + std::to_string(ctx.threads()) + " (from " + ctx.threads_source() +
        "; analyze.csv does not depend on it) |\n";
  md += "| figures | " + pv.python + " |\n| run time | " + fmt_g(secs, 3) + " s |\n";
  md += "| command line | `" + o.command_line + "` |\n";
  write_file_atomic(stage.path() + "/index.md", md);
  throw_if_interrupted();
  io::publish_directory(stage.path(), o.out_dir, false);
  return {rows.size(), fig.ok ? std::string() : fig.note};
}

}  // namespace exmy::reports
