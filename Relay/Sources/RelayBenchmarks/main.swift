import SwiftKVORelay
import Histogram
