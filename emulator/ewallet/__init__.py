"""eWallet payments: the payment an eWallet session makes, its card form and the results the
library reads.
"""
