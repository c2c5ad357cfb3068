// Chart.swift — an SVG chart of the fan-out and contention results, written
// by hand (no dependencies): ns per callback against fan-out on log–log axes,
// and each peer's N-thread ÷ 1-thread throughput ratio as bars.

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

struct Chart {
    var workloads: [WorkloadResult]
    var reference: String
    var subtitle: String

    private static let palette = [
        "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
        "#bcbd22", "#17becf", "#393b79", "#637939", "#8c6d31",
    ]

    private func escape(_ text: String) -> String {
        var out = ""
        for c in text {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            default: out.append(c)
            }
        }
        return out
    }

    private func n(_ value: Double) -> String { formatFixed(value, decimals: 1).replacingCommas() }

    func render() -> String {
        let fanOut = workloads.filter { $0.kind == .fanOut }.sorted { $0.size < $1.size }
        let contention = workloads.first { $0.kind == .contention }

        // Peers in table order, each with a stable colour.
        var peers: [(id: String, title: String)] = []
        for w in workloads where w.kind == .fanOut || w.kind == .contention {
            for r in w.results where !peers.contains(where: { $0.id == r.peer }) {
                peers.append((r.peer, r.title))
            }
        }
        func color(_ id: String) -> String {
            Chart.palette[(peers.firstIndex { $0.id == id } ?? 0) % Chart.palette.count]
        }

        let width = 1000.0
        let plotLeft = 80.0, plotWidth = 520.0, legendLeft = plotLeft + plotWidth + 30
        let fanTop = 70.0, fanHeight = 340.0
        let barRows = contention?.results.count ?? 0
        let barsTop = fanTop + fanHeight + 110
        let barHeight = 22.0
        let height = contention == nil ? fanTop + fanHeight + 80 : barsTop + Double(barRows) * barHeight + 70

        var svg = """
            <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))" \
            viewBox="0 0 \(Int(width)) \(Int(height))" font-family="sans-serif" font-size="12">
            <rect width="100%" height="100%" fill="white"/>
            <text x="\(n(width / 2))" y="24" text-anchor="middle" font-size="16" font-weight="bold">\
            SwiftKVO benchmarks</text>
            <text x="\(n(width / 2))" y="42" text-anchor="middle" fill="#555">\(escape(subtitle))</text>

            """

        // Panel 1: fan-out, log–log.
        let points = fanOut.flatMap { w in w.results.compactMap { $0.nsPerUnit?.median } }.filter { $0 > 0 }
        if !fanOut.isEmpty, let lo = points.min(), let hi = points.max() {
            let yMin = powerOf10(floorLog10(lo)), yMax = powerOf10(ceilLog10(hi) + (hi == lo ? 1 : 0))
            func y(_ v: Double) -> Double {
                fanTop + fanHeight - (log10(v) - log10(yMin)) / (log10(yMax) - log10(yMin)) * fanHeight
            }
            func x(_ index: Int) -> Double {
                fanOut.count == 1
                    ? plotLeft + plotWidth / 2 : plotLeft + Double(index) / Double(fanOut.count - 1) * plotWidth
            }
            svg += "<text x=\"\(n(plotLeft))\" y=\"\(n(fanTop - 12))\" font-size=\"14\" font-weight=\"bold\">"
                + "Fan-out: ns per delivered callback (log scale; lower is better)</text>\n"
            svg += "<rect x=\"\(n(plotLeft))\" y=\"\(n(fanTop))\" width=\"\(n(plotWidth))\" "
                + "height=\"\(n(fanHeight))\" fill=\"none\" stroke=\"#999\"/>\n"
            var decade = yMin
            while decade <= yMax * 1.0001 {
                let yy = y(decade)
                svg += "<line x1=\"\(n(plotLeft))\" y1=\"\(n(yy))\" x2=\"\(n(plotLeft + plotWidth))\" "
                    + "y2=\"\(n(yy))\" stroke=\"#ddd\"/>\n"
                svg += "<text x=\"\(n(plotLeft - 6))\" y=\"\(n(yy + 4))\" text-anchor=\"end\">"
                    + "\(escape(format(decade)))</text>\n"
                decade *= 10
            }
            for (i, w) in fanOut.enumerated() {
                svg += "<text x=\"\(n(x(i)))\" y=\"\(n(fanTop + fanHeight + 18))\" text-anchor=\"middle\">"
                    + "\(w.size)</text>\n"
            }
            svg += "<text x=\"\(n(plotLeft + plotWidth / 2))\" y=\"\(n(fanTop + fanHeight + 36))\" "
                + "text-anchor=\"middle\">observers of one key</text>\n"
            svg += "<text transform=\"translate(\(n(plotLeft - 55)),\(n(fanTop + fanHeight / 2))) rotate(-90)\" "
                + "text-anchor=\"middle\">ns per callback</text>\n"
            for peer in peers {
                var coords: [(Double, Double)] = []
                for (i, w) in fanOut.enumerated() {
                    if let v = w.results.first(where: { $0.peer == peer.id })?.nsPerUnit?.median, v > 0 {
                        coords.append((x(i), y(v)))
                    }
                }
                if coords.isEmpty { continue }
                let c = color(peer.id)
                let width = peer.id == reference ? 3.5 : 1.8
                svg += "<polyline fill=\"none\" stroke=\"\(c)\" stroke-width=\"\(width)\" points=\""
                    + coords.map { "\(n($0.0)),\(n($0.1))" }.joined(separator: " ") + "\"/>\n"
                for (cx, cy) in coords {
                    svg += "<circle cx=\"\(n(cx))\" cy=\"\(n(cy))\" r=\"3.5\" fill=\"\(c)\"/>\n"
                }
            }
            // Legend.
            for (i, peer) in peers.enumerated() {
                let ly = fanTop + 10 + Double(i) * 20
                let label = peer.id == reference ? "\(peer.title) — reference" : peer.title
                svg += "<rect x=\"\(n(legendLeft))\" y=\"\(n(ly - 9))\" width=\"14\" height=\"10\" "
                    + "fill=\"\(color(peer.id))\"/>\n"
                svg += "<text x=\"\(n(legendLeft + 20))\" y=\"\(n(ly))\">\(escape(label))</text>\n"
            }
        }

        // Panel 2: contention scaling.
        if let contention {
            let threads = contention.threads ?? 2
            let maxRatio = max(Double(threads), contention.results.compactMap(\.scalingRatio).max() ?? 1) * 1.1
            let barLeft = 330.0, barWidth = 520.0
            func bx(_ v: Double) -> Double { barLeft + v / maxRatio * barWidth }
            svg += "<text x=\"\(n(plotLeft))\" y=\"\(n(barsTop - 30))\" font-size=\"14\" font-weight=\"bold\">"
                + "Contention: \(threads) threads' total throughput ÷ one thread's "
                + "(one key, 10 observers; higher is better)</text>\n"
            for mark in [1.0, Double(threads)] {
                svg += "<line x1=\"\(n(bx(mark)))\" y1=\"\(n(barsTop - 12))\" x2=\"\(n(bx(mark)))\" "
                    + "y2=\"\(n(barsTop + Double(barRows) * barHeight))\" stroke=\"#888\" "
                    + "stroke-dasharray=\"4 3\"/>\n"
                svg += "<text x=\"\(n(bx(mark)))\" y=\"\(n(barsTop + Double(barRows) * barHeight + 16))\" "
                    + "text-anchor=\"middle\" fill=\"#555\">\(escape(format(mark)))×</text>\n"
            }
            for (i, r) in contention.results.enumerated() {
                let top = barsTop + Double(i) * barHeight
                svg += "<text x=\"\(n(barLeft - 8))\" y=\"\(n(top + 15))\" text-anchor=\"end\">"
                    + "\(escape(r.title))</text>\n"
                if let ratio = r.scalingRatio {
                    svg += "<rect x=\"\(n(barLeft))\" y=\"\(n(top + 3))\" width=\"\(n(max(1, bx(ratio) - barLeft)))\" "
                        + "height=\"\(n(barHeight - 6))\" fill=\"\(color(r.peer))\"/>\n"
                    svg += "<text x=\"\(n(bx(ratio) + 6))\" y=\"\(n(top + 15))\">\(escape(format(ratio)))</text>\n"
                } else {
                    svg += "<text x=\"\(n(barLeft + 6))\" y=\"\(n(top + 15))\" fill=\"#888\">— "
                        + "(not thread-safe)</text>\n"
                }
            }
        }
        svg += "</svg>\n"
        return svg
    }
}

private func powerOf10(_ e: Int) -> Double {
    var r = 1.0
    if e >= 0 { for _ in 0..<e { r *= 10 } } else { for _ in 0..<(-e) { r /= 10 } }
    return r
}

private func floorLog10(_ v: Double) -> Int { Int(log10(v).rounded(.down)) }
private func ceilLog10(_ v: Double) -> Int { Int(log10(v).rounded(.up)) }

extension String {
    /// "1,234.5" → "1234.5" (SVG coordinates).
    func replacingCommas() -> String { String(filter { $0 != "," }) }
}
