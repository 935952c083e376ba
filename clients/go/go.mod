module stpd

go 1.19
